// OSC 1.0 on the wire: messages and bundles as Swift values. Messages are
// read through liblo (`lo_message_deserialise`: it validates every string,
// type tag and argument against the packet's size); the bundle framing
// ("#bundle", a time tag, size-prefixed elements) is walked here, with
// bounds checked before every read, because liblo 0.31 only parses bundles
// inside its own server, which this module does not use (see OSCServer.swift
// for why). Writing is done here (see "writing").

import AudioGraphCore
import CLo
#if canImport(Glibc)
import Glibc
#endif

/// One argument of an OSC message, by its type tag.
public enum OSCArgument: Sendable, Equatable {
    /// `i`
    case int32(Int32)
    /// `h`
    case int64(Int64)
    /// `f`
    case float(Float)
    /// `d`
    case double(Double)
    /// `s`
    case string(String)
    /// `S`
    case symbol(String)
    /// `c`
    case char(UInt8)
    /// `m`: port, status, data 1, data 2.
    case midi(UInt8, UInt8, UInt8, UInt8)
    /// `b`
    case blob([UInt8])
    /// `t`: seconds since 1900 and a binary fraction.
    case timetag(seconds: UInt32, fraction: UInt32)
    /// `T` or `F`
    case bool(Bool)
    /// `N`
    case null
    /// `I`
    case infinitum

    /// The argument's type tag.
    public var typeTag: Character {
        switch self {
        case .int32: "i"
        case .int64: "h"
        case .float: "f"
        case .double: "d"
        case .string: "s"
        case .symbol: "S"
        case .char: "c"
        case .midi: "m"
        case .blob: "b"
        case .timetag: "t"
        case .bool(let b): b ? "T" : "F"
        case .null: "N"
        case .infinitum: "I"
        }
    }

    /// The value as a number, for the numeric types (`i h f d`).
    public var number: Double? {
        switch self {
        case .int32(let v): Double(v)
        case .int64(let v): Double(v)
        case .float(let v): Double(v)
        case .double(let v): v
        default: nil
        }
    }

    /// The text of a string or a symbol (`s S`).
    public var text: String? {
        switch self {
        case .string(let s), .symbol(let s): s
        default: nil
        }
    }
}

/// An OSC message: an address and typed arguments.
public struct OSCMessage: Sendable, Equatable, CustomStringConvertible {
    public var address: String
    public var arguments: [OSCArgument]

    public init(_ address: String, _ arguments: [OSCArgument] = []) {
        self.address = address
        self.arguments = arguments
    }

    /// The type tag string: `,sf` for a string and a float.
    public var typeTags: String { "," + String(arguments.map(\.typeTag)) }

    /// `/agraph/value ,sfs "g.gain" -6.0 "-6"`: for logs and test failures.
    public var description: String {
        let values = arguments.map { a -> String in
            switch a {
            case .int32(let v): "\(v)"
            case .int64(let v): "\(v)"
            case .float(let v): "\(v)"
            case .double(let v): "\(v)"
            case .string(let s), .symbol(let s): "\"\(s)\""
            case .char(let c): "'\(Character(Unicode.Scalar(c)))'"
            case .midi(let a, let b, let c, let d): "midi(\(a) \(b) \(c) \(d))"
            case .blob(let b): "blob(\(b.count) bytes)"
            case .timetag(let s, let f): "timetag(\(s).\(f))"
            case .bool(let b): b ? "true" : "false"
            case .null: "nil"
            case .infinitum: "inf"
            }
        }
        return ([address, typeTags] + values).joined(separator: " ")
    }
}

/// Why a datagram is not OSC, in words for the sender.
public struct OSCDecodeError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

/// Reads and writes OSC packets (a message or a bundle). [any-thread]
public enum OSCPacket {
    /// How deep bundles may nest in a packet this side reads.
    public static let maximumBundleDepth = 8

    /// The messages of one packet, bundles flattened in order (their time
    /// tags are not kept: a bundle's messages run on arrival).
    /// - Throws: `OSCDecodeError` for anything that is not a well-formed
    ///   OSC 1.0 packet; nothing of a damaged packet is returned.
    public static func decode(_ bytes: UnsafeRawBufferPointer) throws(OSCDecodeError) -> [OSCMessage] {
        // liblo is loaded the first time OSC is used (CLazyLibs).
        if let missing = LazyLibrary.require(.liblo, for: "reading OSC") { throw OSCDecodeError(missing) }
        var out: [OSCMessage] = []
        try decode(bytes, depth: 0, into: &out)
        return out
    }

    /// [any-thread]
    public static func decode(_ bytes: [UInt8]) throws(OSCDecodeError) -> [OSCMessage] {
        let result = bytes.withUnsafeBytes { raw -> Result<[OSCMessage], OSCDecodeError> in
            do throws(OSCDecodeError) { return .success(try decode(raw)) } catch { return .failure(error) }
        }
        return try result.get()
    }

    private static let bundleTag: [UInt8] = Array("#bundle".utf8) + [0]

    private static func decode(_ bytes: UnsafeRawBufferPointer, depth: Int, into out: inout [OSCMessage]) throws(OSCDecodeError) {
        guard !bytes.isEmpty else { throw OSCDecodeError("an empty packet") }
        guard bytes.count % 4 == 0 else {
            throw OSCDecodeError("\(bytes.count) bytes: an OSC packet's size is a multiple of 4")
        }
        if bytes.count >= 8 && bytes.prefix(8).elementsEqual(bundleTag) {
            guard depth < maximumBundleDepth else {
                throw OSCDecodeError("bundles nested more than \(maximumBundleDepth) deep")
            }
            guard bytes.count >= 16 else { throw OSCDecodeError("a bundle without its time tag") }
            var offset = 16
            while offset < bytes.count {
                guard bytes.count - offset >= 4 else { throw OSCDecodeError("a bundle element's size is cut off") }
                let size = Int(Int32(bigEndian: bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)))
                offset += 4
                guard size > 0, size <= bytes.count - offset else {
                    throw OSCDecodeError("a bundle element of \(size) bytes where \(bytes.count - offset) remain")
                }
                try decode(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + size)]), depth: depth + 1, into: &out)
                offset += size
            }
            return
        }
        guard bytes.first == UInt8(ascii: "/") else {
            throw OSCDecodeError("not an OSC message: it must start with '/' (an address) or '#bundle'")
        }
        out.append(try message(bytes))
    }

    /// One message, through liblo.
    private static func message(_ bytes: UnsafeRawBufferPointer) throws(OSCDecodeError) -> OSCMessage {
        guard let base = bytes.baseAddress else { throw OSCDecodeError("an empty packet") }
        var result: Int32 = 0
        // lo_message_deserialise copies the bytes; it never writes to them.
        guard let m = lo_message_deserialise(UnsafeMutableRawPointer(mutating: base), bytes.count, &result) else {
            throw OSCDecodeError(describe(result))
        }
        defer { lo_message_free(m) }
        // The path was validated (terminated inside the packet) by liblo.
        let address = String(cString: base.assumingMemoryBound(to: CChar.self))
        guard let typesPointer = lo_message_get_types(m) else { throw OSCDecodeError("no type tag string") }
        let types = Array(UnsafeBufferPointer(start: UnsafeRawPointer(typesPointer).assumingMemoryBound(to: UInt8.self),
                                              count: strlen(typesPointer)))
        let count = Int(lo_message_get_argc(m))
        guard count == types.count else { throw OSCDecodeError("\(types.count) type tags, \(count) arguments") }
        let argv = lo_message_get_argv(m)
        var arguments: [OSCArgument] = []
        arguments.reserveCapacity(count)
        for i in 0..<count {
            let raw = argv.flatMap { $0[i] }.map { UnsafeRawPointer($0) }
            arguments.append(try argument(types[i], raw))
        }
        return OSCMessage(address, arguments)
    }

    /// One argument in host byte order (liblo swapped it), at `raw` (which
    /// may be unaligned; nil for the types without data).
    private static func argument(_ tag: UInt8, _ raw: UnsafeRawPointer?) throws(OSCDecodeError) -> OSCArgument {
        switch tag {
        case UInt8(ascii: "T"): return .bool(true)
        case UInt8(ascii: "F"): return .bool(false)
        case UInt8(ascii: "N"): return .null
        case UInt8(ascii: "I"): return .infinitum
        default: break
        }
        guard let raw else { throw OSCDecodeError("argument of type '\(Character(Unicode.Scalar(tag)))' without data") }
        switch tag {
        case UInt8(ascii: "i"): return .int32(raw.loadUnaligned(as: Int32.self))
        case UInt8(ascii: "h"): return .int64(raw.loadUnaligned(as: Int64.self))
        case UInt8(ascii: "f"): return .float(raw.loadUnaligned(as: Float.self))
        case UInt8(ascii: "d"): return .double(raw.loadUnaligned(as: Double.self))
        case UInt8(ascii: "s"): return .string(String(cString: raw.assumingMemoryBound(to: CChar.self)))
        case UInt8(ascii: "S"): return .symbol(String(cString: raw.assumingMemoryBound(to: CChar.self)))
        case UInt8(ascii: "c"): return .char(UInt8(truncatingIfNeeded: raw.loadUnaligned(as: Int32.self)))
        case UInt8(ascii: "m"):
            return .midi(raw.load(as: UInt8.self), raw.load(fromByteOffset: 1, as: UInt8.self),
                         raw.load(fromByteOffset: 2, as: UInt8.self), raw.load(fromByteOffset: 3, as: UInt8.self))
        case UInt8(ascii: "t"):
            return .timetag(seconds: raw.loadUnaligned(as: UInt32.self), fraction: raw.loadUnaligned(fromByteOffset: 4, as: UInt32.self))
        case UInt8(ascii: "b"):
            // liblo checked that the size fits in the packet.
            let size = Int(raw.loadUnaligned(as: Int32.self))
            guard size >= 0 else { throw OSCDecodeError("a blob of negative size") }
            return .blob(Array(UnsafeRawBufferPointer(start: raw + 4, count: size)))
        default:
            throw OSCDecodeError("unknown type tag '\(Character(Unicode.Scalar(tag)))'")
        }
    }

    /// liblo's error codes (lo_errors.h), in words.
    static func describe(_ code: Int32) -> String {
        switch code {
        case LO_EINVALIDPATH: "not an OSC message: its address is not a terminated, padded string"
        case LO_ENOTYPE: "an OSC message without a type tag string"
        case LO_EINVALIDTYPE: "an OSC message whose type tag string is not terminated and padded"
        case LO_EBADTYPE: "an OSC message whose type tag string does not start with ','"
        case LO_EINVALIDARG: "an OSC message whose arguments are missing, cut off or do not match its type tags"
        case LO_ESIZE: "an OSC message whose arguments do not fill it exactly"
        case LO_EALLOC: "out of memory while reading an OSC message"
        default: "not an OSC message (liblo error \(code))"
        }
    }

    // MARK: writing
    //
    // Written here rather than through lo_message_serialise: liblo 0.31
    // cannot hold an empty blob (lo_blob_new(0, …) returns NULL, and
    // lo_message_add_blob then reads through it: found by fuzz-osc), and
    // OSC 1.0's encoding is a few lines. What is written is checked against
    // the specification's examples and read back through liblo (OSCTests).

    /// A message on the wire. Strings end at their first NUL, as OSC's do.
    /// [any-thread]
    public static func encode(_ message: OSCMessage) -> [UInt8] {
        var out: [UInt8] = []
        appendString(message.address, to: &out)
        appendString(message.typeTags, to: &out)
        for a in message.arguments {
            switch a {
            case .int32(let v): appendBigEndian(UInt32(bitPattern: v), to: &out)
            case .int64(let v): appendBigEndian(UInt64(bitPattern: v), to: &out)
            case .float(let v): appendBigEndian(v.bitPattern, to: &out)
            case .double(let v): appendBigEndian(v.bitPattern, to: &out)
            case .string(let s), .symbol(let s): appendString(s, to: &out)
            case .char(let c): appendBigEndian(UInt32(c), to: &out)
            case .midi(let a, let b, let c, let d): out += [a, b, c, d]
            case .blob(let bytes):
                appendBigEndian(UInt32(clamping: bytes.count), to: &out)
                out += bytes
                pad(&out)
            case .timetag(let seconds, let fraction):
                appendBigEndian(seconds, to: &out)
                appendBigEndian(fraction, to: &out)
            case .bool, .null, .infinitum: break
            }
        }
        return out
    }

    /// A bundle of `messages`, time tag "immediately". [any-thread]
    public static func encodeBundle(_ messages: [OSCMessage]) -> [UInt8] {
        var out = bundleTag
        // OSC's "immediately": seconds 0, fraction 1.
        out += [0, 0, 0, 0, 0, 0, 0, 1]
        for message in messages {
            let bytes = encode(message)
            appendBigEndian(UInt32(bytes.count), to: &out)
            out += bytes
        }
        return out
    }

    /// An OSC-string: the bytes up to the first NUL, then 1 to 4 NULs.
    private static func appendString(_ s: String, to out: inout [UInt8]) {
        out += s.utf8.prefix { $0 != 0 }
        out.append(0)
        pad(&out)
    }

    /// NULs up to a multiple of 4 bytes.
    private static func pad(_ out: inout [UInt8]) {
        while out.count % 4 != 0 { out.append(0) }
    }

    private static func appendBigEndian<T: FixedWidthInteger>(_ v: T, to out: inout [UInt8]) {
        withUnsafeBytes(of: v.bigEndian) { out += $0 }
    }
}
