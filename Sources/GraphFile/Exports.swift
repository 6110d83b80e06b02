// The graph-file module reads and checks graph files; the node-authoring API
// it checks them against (node types, descriptors, contexts, the registry)
// is its own module, which nodes depend on without the parser. Code that
// reads graphs sees both.
@_exported import AudioGraphNodeAPI
