// Plugin conformance checks for `agraph check-plugin` (clap-validator is
// the model): load one library with the loader's checks, then walk every
// node type through its lifecycle on the threads the ABI's tags name, at odd
// block sizes and parameter extremes, and say every failure in words.
import AudioGraphHost
import CAGraphPlugin
#if canImport(Glibc)
import Glibc
#endif

/// The result of checking one plugin library.
public struct PluginConformanceReport: Sendable {
    /// What was checked, one line each.
    public var lines: [String] = []
    /// What is wrong, one sentence each; empty when the plugin passes.
    public var failures: [String] = []
    /// Remarks that are not failures (a configuration `check` refused, a
    /// decoder allocating on the worker thread).
    public var notes: [String] = []
    public var passed: Bool { failures.isEmpty }
}

/// Walks a plugin through the ABI. [main-thread]
public enum PluginConformance {
    /// Block sizes `process` gets: 1, odd, a usual one, and more than a power of two.
    public static let blockSizes = [1, 7, 128, 4099]

    /// An extension id no plugin can know: asked of every instance and of
    /// the plugin, which must answer NULL.
    public static let unknownExtensionID = "agraph.check-plugin.no-such-extension/1"

    /// Runs `body` on the calling thread and returns how many heap
    /// allocations it made, or nil when allocations cannot be counted.
    public typealias AllocationCounter = (() -> Void) -> Int?

    /// Checks the library at `path`.
    /// - Parameters:
    ///   - countAllocations: counts the calling thread's allocations during
    ///     its argument (the audio thread's calls must make none).
    /// [main-thread]
    public static func check(path: String, sampleRate: Double = 48000,
                             countAllocations: @escaping AllocationCounter) -> PluginConformanceReport {
        ThreadRole.check(.main)
        var report = PluginConformanceReport()
        let absolute = realPath(path) ?? path
        var catalog = PluginCatalog()
        catalog.loadLibrary(absolute)
        for f in catalog.failures where f.typeID == nil {
            report.failures.append("the library does not load: \(f.reason)")
        }
        guard let plugin = catalog.plugins.first else { return report }
        report.lines.append("\(plugin.name) \(plugin.version) (\(plugin.vendor)), ABI \(plugin.abiMajor).\(plugin.abiMinor), \(plugin.typeIDs.count) node type\(plugin.typeIDs.count == 1 ? "" : "s")")
        if plugin.abiMinor > PluginCatalog.abiMinor {
            report.notes.append("built against ABI \(plugin.abiMajor).\(plugin.abiMinor), newer than this agraph's \(PluginCatalog.abiMajor).\(PluginCatalog.abiMinor): it loads (a minor version adds only extensions, and this agraph offers none it does not know)")
        }
        if let get = plugin.descriptor?.pointee.get_extension, get(unknownExtensionID) != nil {
            report.failures.append("the plugin's get_extension(\"\(unknownExtensionID)\") answered an extension: an id the plugin does not know must give NULL")
        }
        for f in catalog.failures where f.typeID != nil {
            report.failures.append("node type \"\(f.typeID ?? "?")\" is refused: \(f.reason)")
        }
        for type in catalog.types {
            var walk = TypeWalk(type: type, sampleRate: sampleRate, countAllocations: countAllocations)
            walk.run()
            report.lines += walk.lines
            report.failures += walk.failures.map { "\(type.descriptor.typeID): \($0)" }
            report.notes += walk.notes.map { "\(type.descriptor.typeID): \($0)" }
        }
        if plugin.callDeinit() { report.lines.append("deinit called after the last instance was destroyed") }
        return report
    }
}

/// One node type's walk through the lifecycle.
struct TypeWalk {
    let type: PluginNodeType
    let sampleRate: Double
    let countAllocations: PluginConformance.AllocationCounter
    var lines: [String] = []
    var failures: [String] = []
    var notes: [String] = []
    let maxFrames = PluginConformance.blockSizes.max() ?? 4096

    var t: agraph_node_type_t { type.type.pointee }
    var isDecoder: Bool { type.inputCodec != nil }

    /// Parameter sets: the defaults, then each parameter at each extreme
    /// (min, max; false, true; every choice), the others at their defaults.
    func configurations() -> [(name: String, parameters: NodeParameters)] {
        var defaults: [String: ParameterValue] = [:]
        for p in type.descriptor.parameters {
            if let d = p.defaultValue { defaults[p.name] = d }
            else if p.isRequired, let r = p.range { defaults[p.name] = .number(r.lowerBound) }
        }
        var sets: [(String, NodeParameters)] = [("defaults", NodeParameters(defaults))]
        for p in type.descriptor.parameters {
            var values: [ParameterValue] = []
            switch p.type {
            case .number, .integer:
                if let r = p.range { values = [.number(r.lowerBound), .number(r.upperBound)] }
            case .boolean: values = [.boolean(false), .boolean(true)]
            case .choice(let options): values = options.map { .string($0) }
            default: break
            }
            for v in values where v != defaults[p.name] {
                var d = defaults
                d[p.name] = v
                sets.append(("\(p.name) = \(Self.text(v))", NodeParameters(d)))
            }
        }
        return sets
    }

    static func text(_ v: ParameterValue) -> String {
        switch v {
        case .number(let x): x == x.rounded() && abs(x) < 1e15 ? String(Int(x)) : String(x)
        case .boolean(let b): String(b)
        case .string(let s): "\"\(s)\""
        default: "\(v)"
        }
    }

    mutating func run() {
        // Every port: 2 channels where accepted, else the fewest, tagged with
        // the usual layout for that count (input_port_layouts); outputs by
        // their rule (same as input port 0's).
        let inputPorts = type.inputRanges.map { $0.contains(2) ? 2 : $0.lowerBound }
        let inputChannels = inputPorts.first ?? 0
        let outputPorts: [Int] = type.outputRules.map {
            switch $0 {
            case .none: 0
            case .fixed(let n): n
            case .sameAsInput: inputChannels
            }
        }
        let configs = configurations()
        var walked = 0
        for (name, parameters) in configs {
            let host = PluginHost(nodeID: "check", typeID: type.descriptor.typeID)
            if let check = t.check {
                let r = type.withCreateInfo(nodeID: "check", parameters: parameters, sampleRate: sampleRate, host: host,
                                            inputPortChannels: inputPorts, outputPortChannels: outputPorts) { info, error in
                    check(info, error, UInt32(AGRAPH_ERROR_CAPACITY))
                }
                if r.result == 0 {
                    notes.append("(\(name)) refused by check: \(r.message.isEmpty ? "no reason given" : r.message)")
                    continue
                }
            }
            walk(name: name, parameters: parameters, inputPorts: inputPorts, outputPorts: outputPorts, host: host)
            for v in host.threadViolations() { failures.append("(\(name)) \(v)") }
            walked += 1
        }
        if type.virtualizes, let defaults = configs.first {
            // A virtualizer's output should say it is for headphones.
            let host = PluginHost(nodeID: "check", typeID: type.descriptor.typeID)
            let named = outputLayoutName(defaults.parameters, inputPorts: inputPorts, outputPorts: outputPorts, host: host)
            if !outputPorts.isEmpty && named != ChannelLayout.binaural.rawValue {
                let what = named.map { "names its output \"\($0)\"" }
                    ?? "names no output layout (so its output keeps the usual tag for its channels)"
                notes.append("declares AGRAPH_NODE_VIRTUALIZES but \(what) for \(inputChannels)-channel input, not \"binaural\": a virtualizer after it could render it for headphones again")
            }
        }
        let ports = type.inputNames.count > 1 || type.outputNames.count > 1
            ? "; ports in: \(type.inputNames.joined(separator: ", ")), out: \(type.outputNames.joined(separator: ", "))" : ""
        let kind = isDecoder ? "decoder, \(type.inputCodec ?? "")" : "realtime" + (type.virtualizes ? ", virtualizes" : "")
        lines.append("\(type.descriptor.typeID) (\(kind)\(ports)): \(walked) of \(configs.count) parameter sets walked through create, activate, \(isDecoder ? "decode/flush/drain" : "process") at block sizes \(PluginConformance.blockSizes.map(String.init).joined(separator: ", ")), set_parameter, deactivate, destroy")
    }

    /// The layout tag the plugin names for output port 0 with `parameters`
    /// (inputs tagged with the usual layout for their channels); nil when
    /// it names none.
    func outputLayoutName(_ parameters: NodeParameters, inputPorts: [Int], outputPorts: [Int], host: PluginHost) -> String? {
        guard let outputLayout = type.outputLayout else { return nil }
        return type.withCreateInfo(nodeID: "check", parameters: parameters, sampleRate: sampleRate, host: host,
                                   inputPortChannels: inputPorts, outputPortChannels: outputPorts) { info, _ in
            outputLayout(info, 0).map { truncatedString($0, limit: 64) }
        }.result
    }

    mutating func walk(name: String, parameters: NodeParameters, inputPorts: [Int], outputPorts: [Int], host: PluginHost) {
        guard let create = t.create, let activate = t.activate, let deactivate = t.deactivate, let destroy = t.destroy else {
            failures.append("create, activate, deactivate and destroy are required")
            return
        }
        let made = type.withCreateInfo(nodeID: "check", parameters: parameters, sampleRate: sampleRate, host: host,
                                       inputPortChannels: inputPorts, outputPortChannels: outputPorts) { info, error in
            create(info, error, UInt32(AGRAPH_ERROR_CAPACITY))
        }
        guard let instance = made.result else {
            failures.append("(\(name)) create failed: \(made.message.isEmpty ? "no reason given" : made.message)")
            return
        }
        defer { destroy(instance) }
        // Extensions are found by id: an id no one offers must give NULL
        // (a host asking for an extension it knows relies on that answer).
        if t.get_extension?(instance, PluginConformance.unknownExtensionID) != nil {
            failures.append("(\(name)) get_extension(instance, \"\(PluginConformance.unknownExtensionID)\") answered an extension: an id the plugin does not know must give NULL")
        }
        let route = routeExtension(type.type, instance)
        // The route is told before activation, as a live host does.
        route?.changed?(instance, AGRAPH_ROUTE_HEADPHONES.rawValue)
        var error = [CChar](repeating: 0, count: Int(AGRAPH_ERROR_CAPACITY))
        guard activate(instance, sampleRate, UInt32(maxFrames), &error, UInt32(error.count)) != 0 else {
            error[error.count - 1] = 0
            failures.append("(\(name)) activate failed: \(truncatedString(error))")
            return
        }
        if isDecoder {
            walkDecoder(name: name, instance: instance, channels: outputPorts.first ?? 0)
        } else {
            walkRealtime(name: name, instance: instance, inputPorts: inputPorts, outputPorts: outputPorts)
        }
        // Route changes while active, on the main thread.
        for r in [AGRAPH_ROUTE_SPEAKERS, AGRAPH_ROUTE_UNKNOWN] { route?.changed?(instance, r.rawValue) }
        _ = t.latency?(instance)
        deactivate(instance)
    }

    /// Live parameters and the values to set them to.
    func liveChanges() -> [(index: UInt32, value: Double)] {
        var changes: [(UInt32, Double)] = []
        for (i, p) in type.descriptor.parameters.enumerated() where p.live {
            switch p.type {
            case .boolean: changes += [(UInt32(i), 1), (UInt32(i), 0)]
            case .choice(let options): changes += options.indices.map { (UInt32(i), Double($0)) }
            default:
                if let r = p.range { changes += [(UInt32(i), r.lowerBound), (UInt32(i), r.upperBound)] }
                if case .number(let d)? = p.defaultValue { changes.append((UInt32(i), d)) }
            }
        }
        return changes
    }

    mutating func walkRealtime(name: String, instance: OpaquePointer, inputPorts: [Int], outputPorts: [Int]) {
        guard let process = t.process else { failures.append("no process function"); return }
        let frames = maxFrames
        let inTotal = inputPorts.reduce(0, +), outTotal = outputPorts.reduce(0, +)
        // Every port's channels one after another, with the per-port
        // entries over them.
        let inputs = (0..<max(inTotal, 1)).map { c -> UnsafeMutablePointer<Float> in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            for i in 0..<frames { p[i] = Float(sin(Double(i) * 0.05 + Double(c))) * (i % 97 == 0 ? 1 : 0.5) }
            return p
        }
        let outputs = (0..<max(outTotal, 1)).map { _ in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: frames)
            p.initialize(repeating: 0, count: frames)
            return p
        }
        let inPointers = UnsafeMutablePointer<UnsafePointer<Float>?>.allocate(capacity: inputs.count)
        let outPointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: outputs.count)
        for (c, p) in inputs.enumerated() { inPointers[c] = UnsafePointer(p) }
        for (c, p) in outputs.enumerated() { outPointers[c] = p }
        let inPorts = UnsafeMutablePointer<agraph_input_port_buffers_t>.allocate(capacity: max(inputPorts.count, 1))
        let outPorts = UnsafeMutablePointer<agraph_output_port_buffers_t>.allocate(capacity: max(outputPorts.count, 1))
        var offset = 0
        for (k, n) in inputPorts.enumerated() {
            (inPorts + k).initialize(to: agraph_input_port_buffers_t(channels: UInt32(n), valid_frames: 0, ended: 0, reserved0: 0,
                                                                     buffers: n > 0 ? UnsafePointer(inPointers + offset) : nil))
            offset += n
        }
        offset = 0
        for (k, n) in outputPorts.enumerated() {
            (outPorts + k).initialize(to: agraph_output_port_buffers_t(channels: UInt32(n), valid_frames: 0, ended: 0, reserved0: 0,
                                                                       buffers: n > 0 ? UnsafePointer(outPointers + offset) : nil))
            offset += n
        }
        let inPortCount = inputPorts.count, outPortCount = outputPorts.count
        let block = UnsafeMutablePointer<agraph_process_t>.allocate(capacity: 1)
        defer {
            inputs.forEach { $0.deallocate() }; outputs.forEach { $0.deallocate() }
            inPointers.deallocate(); outPointers.deallocate(); block.deallocate()
            inPorts.deallocate(); outPorts.deallocate()
        }
        let changes = liveChanges()
        let setParameter = t.set_parameter
        let sizes = PluginConformance.blockSizes
        let counter = countAllocations
        var processAllocations: Int?
        var setAllocations: Int?
        var nonFinite = 0
        nonisolated(unsafe) let unsafeInstance = instance
        nonisolated(unsafe) let b = block
        runOnThread(.audio) {
            func run(_ n: Int) {
                b.initialize(to: agraph_process_t(
                    frames: UInt32(n), input_port_count: UInt32(inPortCount), output_port_count: UInt32(outPortCount),
                    reserved0: 0, input_ports: inPortCount > 0 ? UnsafePointer(inPorts) : nil, output_ports: outPortCount > 0 ? outPorts : nil))
                var k = 0
                while k < inPortCount { inPorts[k].valid_frames = UInt32(n); inPorts[k].ended = 0; k += 1 }
                k = 0
                while k < outPortCount { outPorts[k].valid_frames = UInt32(n); outPorts[k].ended = 0; k += 1 }
                process(unsafeInstance, b)
            }
            // Warm-up, not counted: a Swift plugin's runtime makes its
            // metadata on first use (once per process, not per block).
            // The counted loops are plain index loops: a generic iterator
            // allocates in a debug build of this very harness.
            var k = 0
            while k < sizes.count { run(sizes[k]); k += 1 }
            processAllocations = counter {
                var i = 0
                while i < 4 * sizes.count { run(sizes[i % sizes.count]); i += 1 }
            }
            if let setParameter {
                setAllocations = counter {
                    var i = 0
                    while i < changes.count {
                        setParameter(unsafeInstance, changes[i].index, changes[i].value)
                        run(sizes[i % sizes.count])
                        i += 1
                    }
                }
            }
            for c in 0..<outTotal {
                for i in 0..<sizes[sizes.count - 1] where !outPointers[c]![i].isFinite { nonFinite += 1 }
            }
        }
        if let n = processAllocations, n > 0 {
            failures.append("(\(name)) process allocated \(n) time\(n == 1 ? "" : "s") on the audio thread over \(4 * sizes.count) blocks (must be 0: [audio-thread] calls must not allocate)")
        }
        if let n = setAllocations, n > 0 {
            failures.append("(\(name)) set_parameter and process allocated \(n) time\(n == 1 ? "" : "s") on the audio thread (must be 0)")
        }
        if processAllocations == nil { notes.append("allocations not counted (unavailable in this build)") }
        if nonFinite > 0 {
            failures.append("(\(name)) process wrote \(nonFinite) samples that are NaN or infinite")
        }
    }

    mutating func walkDecoder(name: String, instance: OpaquePointer, channels: Int) {
        guard let raw = t.get_extension?(instance, AGRAPH_EXT_DECODER) else {
            failures.append("(\(name)) the instance does not provide \(AGRAPH_EXT_DECODER)")
            return
        }
        let ext = raw.assumingMemoryBound(to: agraph_decoder_ext_t.self).pointee
        guard let decode = ext.decode, let flush = ext.flush, let maxFn = ext.max_frames_per_decode else {
            failures.append("(\(name)) the decoder extension lacks decode, flush or max_frames_per_decode")
            return
        }
        let capacity = Int(maxFn(instance))
        guard capacity > 0 else { failures.append("(\(name)) max_frames_per_decode is 0"); return }
        let pcm = (0..<max(channels, 1)).map { _ in
            let p = UnsafeMutablePointer<Float>.allocate(capacity: capacity)
            p.initialize(repeating: 0, count: capacity)
            return p
        }
        let pointers = UnsafeMutablePointer<UnsafeMutablePointer<Float>?>.allocate(capacity: pcm.count)
        for (c, p) in pcm.enumerated() { pointers[c] = p }
        defer { pcm.forEach { $0.deallocate() }; pointers.deallocate() }
        let changes = liveChanges()
        let setParameter = t.set_parameter
        var problems: [String] = []
        var allocations: Int?
        nonisolated(unsafe) let unsafeInstance = instance
        let counter = countAllocations
        // Frames that are not of its codec: any status will do, but no crash and no overrun.
        let garbage = PluginConformance.blockSizes.enumerated().map { i, n in (0..<n).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) } }
        runOnThread(.worker) {
            func feed(_ bytes: [UInt8], _ timestamp: Int64) {
                var written: UInt32 = 0
                _ = bytes.withUnsafeBufferPointer {
                    decode(unsafeInstance, $0.baseAddress, UInt32($0.count), timestamp, pointers, UInt32(capacity), &written)
                }
                if Int(written) > capacity { problems.append("decode wrote \(written) frames into buffers of \(capacity)") }
            }
            allocations = counter {
                var i = 0
                while i < garbage.count { feed(garbage[i], Int64(i * 1024)); i += 1 }
                i = 0
                while i < changes.count { setParameter?(unsafeInstance, changes[i].index, changes[i].value); i += 1 }
                flush(unsafeInstance)
                // Drain: decode(NULL, 0) until it writes nothing.
                var rounds = 0
                while rounds < 64 {
                    var written: UInt32 = 0
                    let status = decode(unsafeInstance, nil, 0, -1, pointers, UInt32(capacity), &written)
                    if Int(written) > capacity { problems.append("the drain wrote \(written) frames into buffers of \(capacity)") }
                    if status != Int32(AGRAPH_DECODE_OK.rawValue) || written == 0 { break }
                    rounds += 1
                }
                if rounds == 64 { problems.append("the drain (decode with no frame) never stops writing") }
                if let lastError = ext.last_error { _ = lastError(unsafeInstance) }
            }
        }
        for p in problems { failures.append("(\(name)) \(p)") }
        if let n = allocations, n > 0 {
            notes.append("(\(name)) decode, set_parameter and flush allocated \(n) time\(n == 1 ? "" : "s") on the worker thread (allowed there; better not: it runs once per frame)")
        }
        _ = ext.decoder_latency?(instance)
    }
}

/// Runs `body` on a new thread marked `role`, and waits for it.
func runOnThread(_ role: ThreadRole, _ body: @escaping () -> Void) {
    final class Job: @unchecked Sendable {
        let body: () -> Void
        let role: ThreadRole
        init(_ role: ThreadRole, _ body: @escaping () -> Void) { self.role = role; self.body = body }
    }
    let job = Unmanaged.passRetained(Job(role, body)).toOpaque()
    var thread = pthread_t()
    let rc = pthread_create(&thread, nil, { raw in
        guard let raw else { return nil }
        let job = Unmanaged<Job>.fromOpaque(raw).takeRetainedValue()
        ThreadRole.mark(job.role)
        job.body()
        ThreadRole.mark(nil)
        return nil
    }, job)
    if rc != 0 {
        // No thread: run here, marked, rather than not at all.
        let j = Unmanaged<Job>.fromOpaque(job).takeRetainedValue()
        let previous = ThreadRole.current
        ThreadRole.mark(role)
        j.body()
        ThreadRole.mark(previous == .main ? nil : previous)
        return
    }
    pthread_join(thread, nil)
}
