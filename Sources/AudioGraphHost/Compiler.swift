import AudioGraphCore
import GraphFile
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// A validated graph turned into a running engine, with its parameters
/// addressable by name (`node.param`, `node.param[i]`).
public final class CompiledGraph: @unchecked Sendable {
    public let graph: ValidatedGraph
    public let engine: Engine
    /// What compiling did that the user should hear about (folders created
    /// for outputs).
    public let notices: [String]

    init(graph: ValidatedGraph, engine: Engine, notices: [String] = []) {
        self.graph = graph
        self.engine = engine
        self.notices = notices
    }

    /// The graph's node named `id`. [any-thread]
    ///
    /// The engine's steps are the graph's nodes in the same order (`compile`
    /// makes one step per node), so the engine's index by id serves both:
    /// an address resolves without walking the graph (a reload resolves one
    /// per change, and a graph may have tens of thousands of nodes).
    public func graphNode(_ id: String) -> ValidatedGraph.Node? {
        if let i = engine.stepIndex(of: id), i < graph.nodes.count, graph.nodes[i].id == id { return graph.nodes[i] }
        // `withGraph`: a graph whose file lists the same nodes in another order.
        return graph.nodes.first { $0.id == id }
    }

    /// A parameter address that did not resolve, or a value out of range.
    public struct ParameterError: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Resolves a parameter address, already parsed, to a handle: the
    /// node, the parameter and the element it names, checked to be live
    /// and (for lists) in range. Parses nothing. [main-thread | owner-thread | control-thread]
    public func resolve(_ address: ParameterAddress) throws(ParameterError) -> ParameterHandle {
        ThreadRole.check(.main, .owner, .control)
        let nodeID = address.node, name = address.parameter
        guard let index = engine.stepIndex(of: nodeID), let node = graphNode(nodeID) else {
            throw ParameterError(description: NodeNames.noNode(nodeID, in: graph.nodes.map(\.id)))
        }
        let d = node.descriptor
        guard let pIndex = d.parameterIndex(named: name) else {
            throw ParameterError(description: "'\(nodeID)' (\(d.typeID)) has no parameter '\(name)'")
        }
        let p = d.parameters[pIndex]
        guard p.live else {
            let live = d.parameters.filter(\.live).map(\.name)
            throw ParameterError(description: "'\(nodeID).\(name)' cannot change while running; live parameters of \(d.typeID): \(live.isEmpty ? "none" : live.joined(separator: ", "))")
        }
        let isList = p.type == .numberList || p.type == .booleanList
        if isList {
            let count = d.inputPortNames(node.parameters).count
            guard let element = address.element, element < max(count, 1) else {
                throw ParameterError(description: "'\(nodeID).\(name)' is a list: address one element, \(nodeID).\(name)[0…\(max(count - 1, 0))]")
            }
        } else if let element = address.element {
            throw ParameterError(description: "'\(nodeID).\(name)' is not a list; drop the [\(element)]")
        }
        return ParameterHandle(address: address, node: index, parameter: pIndex, descriptor: p, engine: engine)
    }

    /// Parses `node.param` or `node.param[i]` (the one parser,
    /// `ParameterAddress(parsing:)`) and resolves it. [main-thread | owner-thread | control-thread]
    public func resolve(_ address: String) throws(ParameterError) -> ParameterHandle {
        ThreadRole.check(.main, .owner, .control)
        let a: ParameterAddress
        do { a = try ParameterAddress(parsing: address) } catch { throw ParameterError(description: error.message) }
        return try resolve(a)
    }

    /// `handle`, checked to belong to this graph's engine.
    private func check(_ handle: ParameterHandle) throws(ParameterError) {
        guard handle.engine === engine else {
            throw ParameterError(description: "'\(handle.address)' was resolved for a graph that no longer runs: resolve it again")
        }
    }

    /// The change that sets `handle`'s parameter to `value`, checked
    /// against its choices, its range and the node's own rule. [main-thread | owner-thread | control-thread]
    public func change(_ handle: ParameterHandle, _ value: Double) throws(ParameterError) -> ParameterChange {
        ThreadRole.check(.main, .owner, .control)
        try check(handle)
        let p = handle.descriptor
        let name = "\(handle.address.node).\(handle.address.parameter)"
        if case .choice(let options) = p.type, !(value == value.rounded() && value >= 0 && value < Double(options.count)) {
            throw ParameterError(description: "\(name) is one of \(options.joined(separator: ", ")) (or its index 0…\(options.count - 1)); got \(value)")
        }
        if let r = p.range, !r.contains(value) {
            throw ParameterError(description: "\(value) is out of range for \(name): \(ParameterValue.number(r.lowerBound))…\(ParameterValue.number(r.upperBound))\(p.unit.map { " \($0)" } ?? "")")
        }
        if let node = graphNode(handle.address.node),
           let problem = node.type.liveValueProblem(parameter: p.name, element: handle.element,
                                                    value: value, parameters: node.parameters, sampleRate: engine.sampleRate) {
            throw ParameterError(description: "\(handle.address): \(problem)")
        }
        return ParameterChange(node: Int32(handle.node), parameter: Int32(handle.parameter),
                               element: Int32(handle.element ?? -1), value: value)
    }

    /// Resolves `node.param` or `node.param[i]` to a change with `value`.
    /// [main-thread | owner-thread | control-thread]
    public func change(_ address: String, _ value: Double) throws(ParameterError) -> ParameterChange {
        ThreadRole.check(.main, .owner, .control)
        return try change(try resolve(address), value)
    }

    /// Queues a change of `handle`'s parameter for the next block. [main-thread | owner-thread | control-thread]
    public func set(_ handle: ParameterHandle, _ value: Double) throws(ParameterError) {
        ThreadRole.check(.main, .owner, .control)
        let c = try change(handle, value)
        if !engine.post(c) { throw ParameterError(description: "the parameter queue is full; try again") }
        valuesLock.withLock { $0[handle.address.description] = value }
        valuesSet.add(1, ordering: .releasing)
    }

    /// Queues a change for the next block. [main-thread | owner-thread | control-thread]
    public func set(_ address: String, _ value: Double) throws(ParameterError) {
        ThreadRole.check(.main, .owner, .control)
        try set(try resolve(address), value)
    }

    /// The live values set, by address (`node.param`, `node.param[i]`).
    let valuesLock = Locked<[String: Double]>([:])
    /// How many live values were set: a monitor reads `liveValues` again
    /// only when it moved.
    let valuesSet = Atomic<Int>(0)

    /// The number a word stands for at `handle`: a number, true/false/on/off,
    /// or the name of one of a choice parameter's options (its index).
    /// [main-thread | owner-thread | control-thread]
    public func number(_ handle: ParameterHandle, word: String) throws(ParameterError) -> Double {
        ThreadRole.check(.main, .owner, .control)
        if word.utf8.contains(0) {
            throw ParameterError(description: "the value for \(handle.address) has a NUL byte in it: give a number, true/false or an option's name")
        }
        switch word.lowercased() {
        case "true", "on", "yes": return 1
        case "false", "off", "no": return 0
        default: if let v = ControlLine.number(word) { return v }
        }
        let p = handle.descriptor
        if case .choice(let options) = p.type, let i = options.firstIndex(of: word) { return Double(i) }
        throw ParameterError(description: "'\(word)' is not a value of \(handle.address)"
            + (p.type.name.hasPrefix("one of") ? "; it is \(p.type.name)" : "; give a number (or true/false)"))
    }

    /// The number a word stands for at `address` (see `number(_:word:)`).
    /// [main-thread | owner-thread | control-thread]
    public func number(_ address: String, word: String) throws(ParameterError) -> Double {
        ThreadRole.check(.main, .owner, .control)
        if word.utf8.contains(0) {
            throw ParameterError(description: "the value for \(address) has a NUL byte in it: give a number, true/false or an option's name")
        }
        return try number(try resolve(address), word: word)
    }

    /// The value of `handle`'s parameter: the last one set, else the
    /// graph's. Booleans read as 0 or 1. [main-thread | owner-thread | control-thread]
    public func value(_ handle: ParameterHandle) throws(ParameterError) -> Double {
        ThreadRole.check(.main, .owner, .control)
        try check(handle)
        let address = handle.address.description
        if let v = valuesLock.withLock({ $0[address] }) { return v }
        guard let node = graphNode(handle.address.node) else { throw ParameterError(description: "no node for '\(address)'") }
        let name = handle.descriptor.name
        let e = handle.element ?? -1
        switch node.parameters[name] {
        case .number(let v)?: return v
        case .boolean(let b)?: return b ? 1 : 0
        case .string(let s)?:
            if case .choice(let options) = handle.descriptor.type, let i = options.firstIndex(of: s) {
                return Double(i)
            }
            throw ParameterError(description: "'\(address)' is text, not a number")
        case .numberList(let l)? where e >= 0 && e < l.count: return l[e]
        case .booleanList(let l)? where e >= 0 && e < l.count: return l[e] ? 1 : 0
        default:
            // What the node uses in its place (a filter's q 0.7071); lists
            // left out of the graph hold their defaults: 0 dB, not muted.
            return node.type.effectiveValue(parameter: name, element: e >= 0 ? e : nil, parameters: node.parameters,
                                            sampleRate: engine.sampleRate) ?? 0
        }
    }

    /// The value of a parameter by address (see `value(_:)`). [main-thread | owner-thread | control-thread]
    public func value(_ address: String) throws(ParameterError) -> Double {
        ThreadRole.check(.main, .owner, .control)
        return try value(try resolve(address))
    }
}

/// A parameter address resolved once against a compiled graph: the node's
/// step in the engine, the parameter's index in its descriptor, the list
/// element, the descriptor (type, range, unit). Setting or reading through
/// it parses and looks up nothing (`ControlSurface.resolve`,
/// `CompiledGraph.resolve`). It belongs to the engine it was resolved
/// against: a reload that builds a new engine needs new handles.
/// [any-thread; a value]
public struct ParameterHandle: Sendable, CustomStringConvertible {
    /// The address, as parsed.
    public let address: ParameterAddress
    /// The node's index in the engine's schedule.
    public let node: Int
    /// The parameter's index in the node's descriptor.
    public let parameter: Int
    /// The parameter's type, range and unit.
    public let descriptor: ParameterDescriptor
    /// The engine it was resolved against (weak: a reload's old engine goes).
    weak var engine: Engine?

    init(address: ParameterAddress, node: Int, parameter: Int, descriptor: ParameterDescriptor, engine: Engine) {
        self.address = address
        self.node = node
        self.parameter = parameter
        self.descriptor = descriptor
        self.engine = engine
    }

    /// The list element, for list parameters.
    public var element: Int? { address.element }
    /// The inclusive range of values the parameter takes (nil: any).
    public var range: ClosedRange<Double>? { descriptor.range }
    public var description: String { address.description }
}

/// Builds engines from validated graphs. [main-thread]
public enum GraphCompiler {
    /// Offline graphs of at least this many steps prefetch each step's
    /// memory `offlinePrefetchDistance` steps ahead (`Engine.prefetchDistance`);
    /// smaller ones stay in the caches.
    public static let offlinePrefetchSteps = 512
    public static let offlinePrefetchDistance = 2

    /// - Parameters:
    ///   - maxFrames: the largest block the host will render.
    ///   - live: built to run live (file sinks record in place) rather than
    ///     offline (file sinks write a temporary file, renamed when complete).
    ///   - configure: called with each runtime node right after it is made,
    ///     before the engine prepares it (`OfflinePasses` hands analysing
    ///     nodes their role this way).
    /// - Throws: `EngineError` when a node cannot be created (e.g. a file vanished since validation).
    ///   - keeping: hot reload: the running graph and the ids of its nodes to
    ///     keep (their objects, already prepared, go into the new engine;
    ///     see `GraphDiff`).
    ///   - reuseBuses: whether node outputs share buses by liveness
    ///     (`Engine.init`'s `reuseBuses`); nil: when offline and not
    ///     keeping nodes (a live engine gives each output its own bus, so
    ///     that a hot reload can keep any of its nodes). With reuse, only
    ///     the buses feeding sinks hold their node's output after `render`.
    public static func compile(_ graph: ValidatedGraph, maxFrames: Int, live: Bool = false,
                               keeping: (old: CompiledGraph, ids: Set<String>)? = nil,
                               reuseBuses: Bool? = nil,
                               configure: (ValidatedGraph.Node, any RenderNode) throws -> Void = { _, _ in }) throws -> CompiledGraph {
        var keptFrom: [Int?] = []
        var steps: [Engine.Step] = []
        let notices: [String]
        do { notices = try graph.createOutputFolders() } catch { throw EngineError("\(error)") }
        for node in graph.nodes {
            let context = InstanceContext(nodeID: node.id, parameters: node.parameters, inputFormats: node.inputFormats,
                                          outputFormat: node.outputFormat, sampleRate: graph.sampleRate,
                                          directory: graph.directory, inputNodes: node.inputs.map { steps[$0].node },
                                          live: live, outputFormats: node.outputFormats, registry: graph.registry)
            let made: any RenderNode
            if let keeping, keeping.ids.contains(node.id), let j = keeping.old.engine.stepIndex(of: node.id),
               let old = keeping.old.engine.node(node.id) {
                keptFrom.append(j)
                steps.append(.init(id: node.id, node: old, inputs: node.inputs, inputPorts: node.inputSourcePorts,
                                   outputChannelCounts: node.outputFormats.map(\.channels)))
                continue
            }
            keptFrom.append(nil)
            do {
                made = try node.type.makeNode(context)
            } catch let e as EngineError {
                throw e
            } catch {
                throw EngineError(nodeID: node.id, "\(error)")
            }
            try configure(node, made)
            steps.append(.init(id: node.id, node: made, inputs: node.inputs, inputPorts: node.inputSourcePorts,
                               outputChannelCounts: node.outputFormats.map(\.channels)))
        }
        let engine = try Engine(steps: steps, sampleRate: graph.sampleRate, maxFrames: maxFrames,
                                latencyCompensation: graph.latencyCompensation,
                                reusing: keeping.map { EngineReuse(old: $0.old.engine, keptFrom: keptFrom) },
                                reuseBuses: reuseBuses ?? (!live && keeping == nil))
        // Offline, a large graph's node objects no longer stay in the
        // caches from one block to the next: fetch each step's ahead.
        if !live && steps.count >= offlinePrefetchSteps { engine.prefetchDistance = offlinePrefetchDistance }
        return CompiledGraph(graph: graph, engine: engine, notices: notices)
    }
}
