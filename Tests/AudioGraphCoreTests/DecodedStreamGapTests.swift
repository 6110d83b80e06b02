import AudioGraphCore
import XCTest

/// A `DecodedStream` into an output with little room (an offline render's
/// block, a nearly full ring): packets missing from the container still
/// play as silence of their whole length, so that what follows keeps its
/// place, and the decoder's held-back tail still comes out at the end.
final class DecodedStreamGapTests: XCTestCase {
    static let frameLength = 100

    /// Frames of `frameLength` samples at their place in time; those in
    /// `missing` are left out (lost from the container).
    final class Cursor: CompressedFrameCursor {
        var frames: [CompressedFrame]
        var at = 0
        init(count: Int, missing: Range<Int>) {
            frames = (0..<count).filter { !missing.contains($0) }.map { k in
                CompressedFrame(bytes: [UInt8(k)][...], index: k, timestamp: k * DecodedStreamGapTests.frameLength,
                                samplesPerFrame: DecodedStreamGapTests.frameLength, sampleRate: 48000, isIndependent: true)
            }
        }
        func next() -> CompressedFrame? {
            guard at < frames.count else { return nil }
            defer { at += 1 }
            return frames[at]
        }
        func seek(toSample sample: Int) -> Int? { nil }
    }

    /// Decodes frame k to `frameLength` samples of k + 1, one frame late
    /// (as an MDCT codec's delay): the last frame comes out only when the
    /// stream is drained.
    final class Decoder: FrameDecoder {
        var held: Float?
        let channels = 1
        func activate(sampleRate: Double, maxFrames: Int) throws {}
        var maxFramesPerDecode: Int { DecodedStreamGapTests.frameLength }
        var latency: Int { 0 }
        func openStream(_ info: CompressedStreamInfo) -> String? { nil }
        func trimNextFrame(skipStart: Int, discardEnd: Int) {}
        func decode(_ bytes: UnsafeBufferPointer<UInt8>?, timestamp: Int,
                    into pcm: UnsafePointer<UnsafeMutablePointer<Float>?>, capacity: Int) -> FrameDecodeStatus {
            let previous = held
            held = bytes.map { Float($0[0]) + 1 }
            guard let previous, let out = pcm[0] else { return .ok(frames: 0) }
            for i in 0..<DecodedStreamGapTests.frameLength { out[i] = previous }
            return .ok(frames: DecodedStreamGapTests.frameLength)
        }
        func flush() { held = nil }
        var lastError: String? { nil }
        var concealedFrames: Int { 0 }
    }

    /// Keeps everything written, with room for `room` frames per step.
    final class SmallOutput: DecodedPCMOutput {
        let room: Int
        var left: Int
        var samples: [Float] = []
        init(room: Int) {
            self.room = room
            left = room
        }
        var writableFrames: Int { left }
        func write(_ channels: UnsafePointer<UnsafeMutablePointer<Float>?>, count: Int, offset: Int, frames: Int) {
            precondition(frames <= left, "written past the room")
            left -= frames
            samples += UnsafeBufferPointer(start: channels[0]! + offset, count: frames)
        }
    }

    func run(room: Int) -> (samples: [Float], bad: Int) {
        let stream = DecodedStream(cursor: Cursor(count: 20, missing: 3..<13), decoder: Decoder(), window: PlaybackWindow(),
                                   framesPerDecode: Self.frameLength, sampleRate: 48000)
        XCTAssertNil(stream.openIfNeeded())
        let out = SmallOutput(room: room)
        var steps = 0
        while !stream.isDone && steps < 1000 {
            out.left = out.room
            stream.step(into: out)
            steps += 1
        }
        XCTAssertTrue(stream.isDone)
        return (out.samples, stream.badFrames.count)
    }

    func testAGapLongerThanTheOutputsRoomPlaysWholeAndTheFramesAfterItKeepTheirPlace() {
        for room in [100, 250, 5000] {
            let (samples, bad) = run(room: room)
            let n = Self.frameLength
            // The decoder is a frame late: frame k's output (k + 1) plays at
            // (k - 1) × n. Frames 1 and 2's outputs, then the gap's 10 frames
            // of silence (frame 2's held output went with the flush at the
            // gap), then frame 13's output at frame 12's place and so on.
            XCTAssertEqual(bad, 10, "room \(room): the missing frames counted")
            XCTAssertEqual(samples.count, 19 * n, "room \(room): every frame's time")
            guard samples.count == 19 * n else { continue }
            XCTAssertEqual(Array(samples[0..<n]), Array(repeating: 1, count: n), "room \(room)")
            XCTAssertEqual(Array(samples[n..<(2 * n)]), Array(repeating: 2, count: n), "room \(room)")
            XCTAssertEqual(Array(samples[(2 * n)..<(12 * n)]), Array(repeating: 0, count: 10 * n),
                           "room \(room): the gap's whole length of silence")
            XCTAssertEqual(Array(samples[(12 * n)..<(13 * n)]), Array(repeating: 14, count: n),
                           "room \(room): frame 13 where it belongs")
            XCTAssertEqual(samples[19 * n - 1], 20, "room \(room): the last frame, drained at the end")
        }
    }
}
