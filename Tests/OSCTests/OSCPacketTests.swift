import AudioGraphOSC
import XCTest

/// The OSC wire format as read and written through liblo: the OSC 1.0
/// specification's own examples byte for byte, every argument type both
/// ways, and damaged packets refused with a reason (never a crash).
final class OSCPacketTests: XCTestCase {
    /// The OSC 1.0 specification's examples ("OSC Message Examples").
    static let frequency: [UInt8] = [
        0x2f, 0x6f, 0x73, 0x63, 0x69, 0x6c, 0x6c, 0x61, 0x74, 0x6f, 0x72, 0x2f, 0x34, 0x2f, 0x66, 0x72,
        0x65, 0x71, 0x75, 0x65, 0x6e, 0x63, 0x79, 0x00, 0x2c, 0x66, 0x00, 0x00, 0x43, 0xdc, 0x00, 0x00,
    ]
    static let foo: [UInt8] = [
        0x2f, 0x66, 0x6f, 0x6f, 0x00, 0x00, 0x00, 0x00, 0x2c, 0x69, 0x69, 0x73, 0x66, 0x66, 0x00, 0x00,
        0x00, 0x00, 0x03, 0xe8, 0xff, 0xff, 0xff, 0xff, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x00, 0x00, 0x00,
        0x3f, 0x9d, 0xf3, 0xb6, 0x40, 0xb5, 0xb2, 0x2d,
    ]

    func testTheSpecificationsExamplesReadAndWriteByteForByte() throws {
        let f = OSCMessage("/oscillator/4/frequency", [.float(440)])
        XCTAssertEqual(OSCPacket.encode(f), Self.frequency)
        XCTAssertEqual(try OSCPacket.decode(Self.frequency), [f])

        let foo = OSCMessage("/foo", [.int32(1000), .int32(-1), .string("hello"), .float(1.234), .float(5.678)])
        XCTAssertEqual(OSCPacket.encode(foo), Self.foo)
        XCTAssertEqual(try OSCPacket.decode(Self.foo), [foo])
        XCTAssertEqual(foo.typeTags, ",iisff")
    }

    func testEveryArgumentTypeSurvivesARoundTrip() throws {
        let m = OSCMessage("/agraph/all", [
            .int32(-7), .int64(1 << 40), .float(-0.5), .double(1e-300), .string("Grüße"), .symbol("sym"),
            .char(65), .midi(1, 0x90, 60, 127), .blob([1, 2, 3, 4, 5]), .timetag(seconds: 3_900_000_000, fraction: 42),
            .bool(true), .bool(false), .null, .infinitum,
        ])
        let bytes = OSCPacket.encode(m)
        XCTAssertEqual(bytes.count % 4, 0)
        XCTAssertEqual(try OSCPacket.decode(bytes), [m])
        XCTAssertEqual(m.typeTags, ",ihfdsScmbtTFNI")
    }

    /// An empty blob (size 0, no data) is valid OSC; liblo 0.31 cannot
    /// write one (`lo_blob_new(0, …)` is NULL and `lo_message_add_blob`
    /// reads through it): fuzz-osc found the crash when writing back what
    /// this packet reads as.
    func testAnEmptyBlobIsWrittenAndRead() throws {
        let m = OSCMessage("/b", [.blob([]), .int32(7)])
        let bytes: [UInt8] = Array("/b".utf8) + [0, 0] + Array(",bi".utf8) + [0] + [0, 0, 0, 0] + [0, 0, 0, 7]
        XCTAssertEqual(OSCPacket.encode(m), bytes)
        XCTAssertEqual(try OSCPacket.decode(bytes), [m])
        // fuzz-osc's reproducer (72 bytes): every type, the blob empty.
        let found: [UInt8] = [
            0x2f, 0x78, 0x00, 0x00, 0x2c, 0x69, 0x68, 0x66, 0x64, 0x73, 0x53, 0x63, 0x6d, 0x62, 0x74, 0x54,
            0x4e, 0x4e, 0x00, 0x00, 0x49, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x40, 0x23, 0x62, 0x75,
            0x6e, 0x64, 0x6c, 0x65, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x53, 0xf7, 0x00, 0x00, 0x00, 0x00, 0x00, 0x41, 0x00, 0x90, 0x3c, 0x64, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x02,
        ]
        let read = try OSCPacket.decode(found)
        XCTAssertEqual(read.first?.arguments[8], .blob([]))
        // Written back, it reads the same (its symbol, not UTF-8, reads as U+FFFD both times).
        XCTAssertEqual(try OSCPacket.decode(OSCPacket.encode(try XCTUnwrap(read.first))), read)
    }

    func testABundleIsReadAsItsMessagesInOrderNestedBundlesToo() throws {
        let a = OSCMessage("/a", [.int32(1)]), b = OSCMessage("/b", [.string("x")]), c = OSCMessage("/c")
        let inner = OSCPacket.encodeBundle([b])
        var outer = OSCPacket.encodeBundle([a])
        withUnsafeBytes(of: Int32(inner.count).bigEndian) { outer += $0 }
        outer += inner
        let cBytes = OSCPacket.encode(c)
        withUnsafeBytes(of: Int32(cBytes.count).bigEndian) { outer += $0 }
        outer += cBytes
        XCTAssertEqual(try OSCPacket.decode(outer), [a, b, c])
        XCTAssertEqual(Array(OSCPacket.encodeBundle([]).prefix(8)), Array("#bundle".utf8) + [0])
        XCTAssertEqual(try OSCPacket.decode(OSCPacket.encodeBundle([])), [], "an empty bundle holds no messages")
    }

    /// Each damaged packet is refused with what is wrong with it.
    func testDamagedPacketsAreRefusedWithAReason() {
        let good = Self.frequency
        let cases: [(String, [UInt8], String)] = [
            ("empty", [], "empty"),
            ("3 bytes", [0x2f, 0x61, 0], "multiple of 4"),
            ("text", Array("garbage!".utf8), "must start with '/'"),
            ("no type tags", Array("/foo".utf8) + [0, 0, 0, 0], "type tag"),
            ("no comma", Array("/foo".utf8) + [0, 0, 0, 0] + Array("if".utf8) + [0, 0], "','"),
            ("argument cut off", Array(good.dropLast(4)), "arguments are missing"),
            ("bytes left over", good + [0, 0, 0, 0], "do not fill"),
            ("unterminated address", Array("/abcdefg".utf8), "address"),
            ("unknown type tag", Array("/foo".utf8) + [0, 0, 0, 0] + Array(",q".utf8) + [0, 0], "type tag"),
            ("bundle element too long", Array("#bundle".utf8) + [0] + [UInt8](repeating: 0, count: 8) + [0, 0, 1, 0] + good, "bytes where"),
            ("bundle element of size 0", Array("#bundle".utf8) + [0] + [UInt8](repeating: 0, count: 8) + [0, 0, 0, 0], "bytes where"),
            ("bundle without time tag", Array("#bundle".utf8) + [0], "time tag"),
            ("blob longer than the packet", Array("/b".utf8) + [0, 0] + Array(",b".utf8) + [0, 0] + [0, 0, 0, 64, 1, 2, 3, 4], "argument"),
        ]
        for (name, bytes, reason) in cases {
            XCTAssertThrowsError(try OSCPacket.decode(bytes), name) { error in
                let message = (error as? OSCDecodeError)?.message ?? "\(error)"
                XCTAssertTrue(message.contains(reason), "\(name): '\(message)' should say \(reason)")
            }
        }
        // Bundles nested deeper than the limit.
        var nested = OSCPacket.encode(OSCMessage("/x"))
        for _ in 0...OSCPacket.maximumBundleDepth {
            var b = Array("#bundle".utf8) + [0] + [UInt8](repeating: 0, count: 8)
            withUnsafeBytes(of: Int32(nested.count).bigEndian) { b += $0 }
            nested = b + nested
        }
        XCTAssertThrowsError(try OSCPacket.decode(nested)) { error in
            XCTAssertTrue("\(error)".contains("nested"), "\(error)")
        }
    }

    /// Random bytes, and good packets with bytes changed or cut: each is
    /// either read or refused, never a crash; what is read encodes to a
    /// packet that reads the same.
    func testRandomAndMutatedPacketsNeverCrash() throws {
        var rng = SplitMix(seed: 12)
        let seeds = [Self.frequency, Self.foo, OSCPacket.encodeBundle([OSCMessage("/a", [.blob([9, 9]), .string("s")])])]
        var read = 0
        for i in 0..<20_000 {
            var bytes: [UInt8]
            if i % 2 == 0 {
                bytes = (0..<(Int(rng.next() % 64) * 4)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                if !bytes.isEmpty && i % 4 == 0 { bytes[0] = UInt8(ascii: "/") }
            } else {
                bytes = seeds[i % seeds.count]
                for _ in 0..<(1 + Int(rng.next() % 4)) {
                    bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next())
                }
                if rng.next() % 3 == 0 { bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count + 1)))) }
            }
            guard let messages = try? OSCPacket.decode(bytes) else { continue }
            read += 1
            for m in messages {
                // Compared as text: a mutated float may be a NaN.
                XCTAssertEqual(try OSCPacket.decode(OSCPacket.encode(m)).map(\.description), [m.description], "\(bytes)")
            }
        }
        XCTAssertGreaterThan(read, 100, "some mutated packets are still valid OSC")
    }
}

/// A small deterministic generator (SplitMix64).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
