import AudioGraphCore
import AudioGraphNodeAPI
import Foundation

/// `agraph check-plugin lv2:URI`: an LV2 plugin through AudioGraph's host,
/// checked the way `agraph check-plugin` checks a node plugin: made,
/// activated, run at odd block sizes (1, 7, 128, 4099) with every control
/// at its default and at its extremes, allocations counted in each render.
/// AudioGraph's own work around `run` allocates nothing (the tests count
/// it), so what is counted is the plugin's. [main-thread; the renders run
/// on the calling thread, marked as the audio thread]
public enum LV2Conformance {
    public struct Report: Sendable {
        public var lines: [String] = []
        public var failures: [String] = []
        public var passed: Bool { failures.isEmpty }
    }

    /// - Parameter count: runs its closure and returns the allocations it
    ///   made on this thread (nil: counting is not available).
    public static func check(uri: String, count: (() -> Void) -> Int?) -> Report {
        var report = Report()
        let type: LV2PluginType
        do { type = try LV2PluginType(plugin: LV2World.shared.describe(uri)) } catch {
            report.failures.append("\(error)")
            return report
        }
        let plugin = type.plugin
        report.lines.append("\(plugin.name) <\(uri)>: \(plugin.audioInputs.count) audio in, \(plugin.audioOutputs.count) out, \(type.controls.count) controls")
        let rate = 48000.0, maxFrames = 4099
        let channels = plugin.audioInputs.count
        let node = LV2Node(nodeID: "check", plugin: plugin, controls: type.controls, descriptor: type.descriptor,
                           instanceCount: 1, initialValues: [:], state: nil, sampleRate: rate)
        let pool = BusPool(channelCounts: [channels, plugin.audioOutputs.count] + (plugin.sideChainInputs.isEmpty ? [] : [plugin.sideChainInputs.count]),
                           capacity: maxFrames)
        let input = pool.buses[0], output = pool.buses[1]
        let side = pool.buses.count > 2 ? pool.buses[2] : nil
        do {
            try node.prepare(inputs: [input] + (side.map { [$0] } ?? []), outputs: [output], context: PrepareContext(sampleRate: rate, maxFrames: maxFrames))
        } catch {
            report.failures.append("prepare: \(error)")
            return report
        }
        /// A block of `n` frames in: a 997 Hz sine at −12 dBFS on every channel.
        func feed(_ n: Int) {
            pool.setBlockFrames(n)
            for c in 0..<channels {
                let p = input.channel(c)
                for i in 0..<n { p[i] = 0.25 * Float(sin(2 * Double.pi * 997 * Double(i) / rate)) }
            }
            input.state = BusState(validFrames: n, ended: false)
            side?.state = BusState(validFrames: n, ended: false)
        }
        // Warm-up: the first runs may set up lazily (not counted).
        for n in [1, 7, 128, 4099] {
            feed(n)
            node.render(frames: n)
        }

        var settings: [(String, [ParameterChange])] = [("defaults", [])]
        for (i, p) in type.descriptor.parameters.enumerated() {
            guard let control = type.controls.first(where: { $0.parameter.name == p.name }) else { continue }
            var extremes: [Double] = []
            switch p.type {
            case .boolean: extremes = [0, 1]
            case .choice(let options): extremes = Array(0..<options.count).map(Double.init)
            default:
                if let r = p.range { extremes = [r.lowerBound, r.upperBound] }
                else if let f = control.rateFractions { extremes = [f.min, f.max].compactMap { $0.map { $0 * rate } } }
            }
            for v in extremes {
                settings.append(("\(p.name) = \(v)", [ParameterChange(node: 0, parameter: Int32(i), value: v)]))
            }
        }
        var counted = 0
        var allocating: [String] = []
        var nonFinite: [String] = []
        for (what, changes) in settings {
            for n in [1, 7, 128, 4099] {
                feed(n)
                var allocations: Int?
                let applyAllocations = count {
                    var k = 0
                    while k < changes.count {
                        node.apply(changes[k])
                        k += 1
                    }
                }
                allocations = count { node.render(frames: n) }
                if let a = applyAllocations, a > 0 { report.failures.append("AudioGraph's apply allocated \(a) time(s) (\(what)): a host defect") }
                if let a = allocations {
                    counted += 1
                    if a > 0 { allocating.append("\(a) allocation\(a == 1 ? "" : "s") at block size \(n) (\(what))") }
                }
                for c in 0..<output.channels where !(0..<n).allSatisfy({ output.channel(c)[$0].isFinite }) {
                    nonFinite.append("channel \(c) at block size \(n) (\(what))")
                }
            }
        }
        report.lines.append("ran \(settings.count) settings × 4 block sizes (1, 7, 128, 4099)\(counted == 0 ? "; allocations not counted in this build" : "")")
        if !allocating.isEmpty {
            report.failures.append("the plugin \(plugin.name) <\(uri)> allocates in its run (not AudioGraph: nothing around run allocates): " + allocating.prefix(8).joined(separator: "; "))
        } else if counted > 0 {
            report.lines.append("no allocation in \(counted) counted renders")
        }
        if !nonFinite.isEmpty {
            report.failures.append("the plugin's output is not finite (NaN or infinity): " + nonFinite.prefix(4).joined(separator: "; "))
        }
        _ = node.drainLog()
        return report
    }
}
