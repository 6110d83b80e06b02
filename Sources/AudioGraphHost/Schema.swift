/// The JSON Schema (draft 2020-12) of the graph format, generated from the
/// node descriptors so it cannot drift from the code. Published as
/// `docs/graph.schema.json`; a test keeps the file equal to this.
public enum GraphSchema {
    public static func make(registry: NodeRegistry) -> JSONOut {
        let types = registry.types.map(\.descriptor)
        let specialising = Set(registry.types.filter { $0 is any SpecialisingNodeType }.map(\.descriptor.typeID))
        var defs: [(String, JSONOut)] = [
            ("id", .object([
                ("type", .string("string")),
                ("pattern", .string("^[A-Za-z0-9_-]+$")),
                ("description", .string("Unique node id: letters, digits, '_' and '-'.")),
            ])),
            ("endpoint", .object([
                ("type", .string("string")),
                ("pattern", .string("^[A-Za-z0-9_-]+(:[A-Za-z0-9_]+)?$")),
                ("description", .string("\"node\" (its default port: `in`, `out`, or a node's only port) or \"node:port\" (e.g. \"mix:in2\", \"split:out1\", \"duck:sidechain\"); port names hold letters, digits and '_'.")),
            ])),
            ("link", .object([
                ("type", .string("object")),
                ("required", .array([.string("from"), .string("to")])),
                ("additionalProperties", .bool(false)),
                ("properties", .object([
                    ("from", .object([("$ref", .string("#/$defs/endpoint"))])),
                    ("to", .object([("$ref", .string("#/$defs/endpoint"))])),
                ])),
            ])),
            ("node", .object([
                ("oneOf", .array(types.map { .object([("$ref", .string("#/$defs/node-\($0.typeID)"))]) }
                                 + [.object([("$ref", .string("#/$defs/node-other-plugin"))])])),
            ])),
        ]
        for d in types {
            defs.append(("node-\(d.typeID)", nodeSchema(d, specialising: specialising.contains(d.typeID))))
        }
        defs.append(("node-other-plugin", otherPluginSchema(knownTypes: types.map(\.typeID))))
        return .object([
            ("$schema", .string("https://json-schema.org/draft/2020-12/schema")),
            ("title", .string("AudioGraph graph file (\(GraphValidator.formatVersion))")),
            ("description", .string("Generated from the node descriptors by `agraph schema`; do not edit by hand.")),
            ("type", .string("object")),
            ("required", .array([.string("format"), .string("nodes")])),
            ("additionalProperties", .bool(false)),
            ("properties", .object([
                ("format", .object([("const", .string(GraphValidator.formatVersion))])),
                ("name", .object([("type", .string("string")), ("minLength", .number(1))])),
                ("description", .object([("type", .string("string"))])),
                ("sampleRate", .object([
                    ("type", .string("integer")),
                    ("minimum", .number(GraphValidator.sampleRateRange.lowerBound)),
                    ("maximum", .number(GraphValidator.sampleRateRange.upperBound)),
                    ("default", .number(GraphValidator.defaultSampleRate)),
                ])),
                ("latencyCompensation", .object([
                    ("type", .string("boolean")),
                    ("default", .bool(true)),
                    ("description", .string("Align paths of different latency where they meet (a mixer's inputs) by delaying the shorter ones; false turns it off for this graph.")),
                ])),
                ("threads", .object([
                    ("oneOf", .array([
                        .object([("type", .string("integer")), ("minimum", .number(1)),
                                 ("maximum", .number(Double(GraphThreads.maximum)))]),
                        .object([("const", .string("auto"))]),
                    ])),
                    ("default", .number(1)),
                    ("description", .string("Threads that render the graph live (agraph run --threads): 1, JACK's process thread alone; N, that thread and N - 1 helpers running independent branches at the same time; \"auto\", one per independent branch up to the number of CPUs, when there are at least two of each.")),
                ])),
                ("nodes", .object([
                    ("type", .string("array")), ("minItems", .number(1)),
                    ("items", .object([("$ref", .string("#/$defs/node"))])),
                ])),
                ("links", .object([
                    ("type", .string("array")),
                    ("items", .object([("$ref", .string("#/$defs/link"))])),
                ])),
            ])),
            ("$defs", .object(defs)),
        ])
    }

    /// A node of a plugin type this schema was not generated with: a
    /// reverse-DNS type id ("com.example.tremolo") and any parameters; the
    /// plugin's own description (`agraph nodes TYPE`) says which.
    static func otherPluginSchema(knownTypes: [String]) -> JSONOut {
        .object([
            ("type", .string("object")),
            ("description", .string("A node of a plugin type not known when this schema was generated (a reverse-DNS type id); `agraph nodes TYPE` describes its parameters.")),
            ("required", .array([.string("id"), .string("type")])),
            ("additionalProperties", .bool(false)),
            ("properties", .object([
                ("id", .object([("$ref", .string("#/$defs/id"))])),
                ("type", .object([
                    ("type", .string("string")),
                    ("pattern", .string("^[A-Za-z][A-Za-z0-9_-]*(\\.[A-Za-z0-9_-]+)+$")),
                    ("not", .object([("enum", .array(knownTypes.map { .string($0) }))])),
                ])),
                ("description", .object([("type", .string("string"))])),
                ("params", .object([("type", .string("object"))])),
            ])),
        ])
    }

    static func nodeSchema(_ d: NodeDescriptor, specialising: Bool) -> JSONOut {
        let required = d.parameters.filter(\.isRequired).map { JSONOut.string($0.name) }
        // A specialising type (lv2): the other parameters depend on the
        // chosen one (the plugin's ports); `agraph validate` checks them.
        var params: [(String, JSONOut)] = [
            ("type", .string("object")),
            ("additionalProperties", .bool(specialising)),
            ("properties", .object(d.parameters.map { ($0.name, parameterSchema($0)) })),
        ]
        if !required.isEmpty { params.insert(("required", .array(required)), at: 1) }
        let node: [(String, JSONOut)] = [
            ("type", .string("object")),
            ("description", .string(d.summary)),
            ("required", .array([.string("id"), .string("type")] + (required.isEmpty ? [] : [.string("params")]))),
            ("additionalProperties", .bool(false)),
            ("properties", .object([
                ("id", .object([("$ref", .string("#/$defs/id"))])),
                ("type", .object([("const", .string(d.typeID))])),
                ("description", .object([("type", .string("string"))])),
                ("params", .object(params)),
            ])),
        ]
        return .object(node)
    }

    static func parameterSchema(_ p: ParameterDescriptor) -> JSONOut {
        var out: [(String, JSONOut)] = []
        func range(_ into: inout [(String, JSONOut)]) {
            if let r = p.range {
                into.append(("minimum", .number(r.lowerBound)))
                into.append(("maximum", .number(r.upperBound)))
            }
        }
        switch p.type {
        case .number: out.append(("type", .string("number"))); range(&out)
        case .integer: out.append(("type", .string("integer"))); range(&out)
        case .boolean: out.append(("type", .string("boolean")))
        case .string: out.append(("type", .string("string")))
        case .path, .outputPath: out.append(("type", .string("string"))); out.append(("minLength", .number(1)))
        case .choice(let options): out.append(("enum", .array(options.map { .string($0) })))
        case .numberList:
            var item: [(String, JSONOut)] = [("type", .string("number"))]
            range(&item)
            out.append(("type", .string("array")))
            out.append(("items", .object(item)))
        case .booleanList:
            out.append(("type", .string("array")))
            out.append(("items", .object([("type", .string("boolean"))])))
        case .stringList:
            out.append(("type", .string("array")))
            out.append(("items", .object([("type", .string("string")), ("minLength", .number(1))])))
        case .channelList:
            var index: [(String, JSONOut)] = [("type", .string("integer"))]
            range(&index)
            if p.range == nil { index.append(("minimum", .number(0))) }
            out.append(("type", .string("array")))
            out.append(("items", .object([("anyOf", .array([
                .object(index), .object([("type", .string("string")), ("minLength", .number(1))]),
            ]))])))
        case .indexOrWord(let words):
            var index: [(String, JSONOut)] = [("type", .string("integer"))]
            range(&index)
            if p.range == nil { index.append(("minimum", .number(0))) }
            out.append(("anyOf", .array([.object(index), .object([("enum", .array(words.map { .string($0) }))])])))
        case .numberMatrix:
            var item: [(String, JSONOut)] = [("type", .string("number"))]
            range(&item)
            out.append(("type", .string("array")))
            out.append(("items", .object([("type", .string("array")), ("items", .object(item))])))
        case .objectList(let fields):
            var object: [(String, JSONOut)] = [("type", .string("object"))]
            let required = fields.filter(\.isRequired).map { JSONOut.string($0.name) }
            if !required.isEmpty { object.append(("required", .array(required))) }
            object.append(("additionalProperties", .bool(false)))
            object.append(("properties", .object(fields.map { ($0.name, parameterSchema($0)) })))
            out.append(("type", .string("array")))
            out.append(("items", .object(object)))
        }
        if let d = p.defaultValue { out.append(("default", d.json)) }
        var text = p.summary
        if let u = p.unit { text += " Unit: \(u)." }
        if p.live { text += " Live." }
        out.append(("description", .string(text)))
        return .object(out)
    }
}
