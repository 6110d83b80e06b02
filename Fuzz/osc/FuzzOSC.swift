// libFuzzer target: OSC packets as `agraph run --osc` reads them
// (AudioGraphOSC.OSCPacket: the bundle framing walked in Swift, each
// message through liblo's lo_message_deserialise). Besides not crashing,
// whatever is read must write back to a packet that reads the same. See
// Fuzz/README.md.
//
// Without libFuzzer, `fuzz-osc --write-seeds FOLDER` writes the packets of
// Fuzz/seeds/osc.

import AudioGraphOSC
import FuzzSupport

enum Target: FuzzTarget {
    /// One input: one UDP datagram's bytes. [any thread]
    static func fuzzOne(_ bytes: UnsafeBufferPointer<UInt8>) {
        guard let messages = try? OSCPacket.decode(UnsafeRawBufferPointer(bytes)) else { return }
        for m in messages {
            precondition(m.address.utf8.first == UInt8(ascii: "/"), "a message whose address does not start with '/'")
            // As text: a float read from the input may be a NaN.
            let again = try? OSCPacket.decode(OSCPacket.encode(m))
            precondition(again?.map(\.description) == [m.description], "a message that does not write back the same")
        }
        _ = try? OSCPacket.decode(OSCPacket.encodeBundle(messages))
    }

    /// The packets of Fuzz/seeds/osc (`fuzz-osc --write-seeds FOLDER`).
    static var seeds: [String: [UInt8]] {
        [
            "set.osc": OSCPacket.encode(OSCMessage("/agraph/g/gain", [.float(-6)])),
            "set-element.osc": OSCPacket.encode(OSCMessage("/agraph/mix/gains/1", [.int32(-3)])),
            "set-ack.osc": OSCPacket.encode(OSCMessage("/agraph/set", [.string("g.mute"), .bool(true)])),
            "get.osc": OSCPacket.encode(OSCMessage("/agraph/get", [.string("m.peak[1]")])),
            "subscribe.osc": OSCPacket.encode(OSCMessage("/agraph/subscribe", [.string("meters"), .double(10),
                                                                                .string("osc.udp://127.0.0.1:9001/")])),
            "every-type.osc": OSCPacket.encode(OSCMessage("/x", [
                .int32(1), .int64(2), .float(3), .double(4), .string("s"), .symbol("S"), .char(65), .midi(0, 0x90, 60, 100),
                .blob([1, 2, 3]), .timetag(seconds: 1, fraction: 2), .bool(true), .bool(false), .null, .infinitum,
            ])),
            "bundle.osc": OSCPacket.encodeBundle([OSCMessage("/agraph/pause"), OSCMessage("/agraph/status")]),
        ]
    }
}
