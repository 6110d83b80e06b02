// AGraphPluginKit: write an AudioGraph node plugin in Swift.
//
// A plugin is one short file: a class conforming to `PluginNode` per node
// type, a `PluginExport(...)` built once, and the exported entry
// point:
//
//     import AGraphPluginKit
//
//     final class Tremolo: PluginNode { ... }
//
//     let plugin = PluginExport(name: "Tremolo", vendor: "Example",
//                               version: "1.0", nodes: [Tremolo.self])
//
//     @c(agraph_plugin_entry)
//     public func agraphPluginEntry() -> UnsafePointer<agraph_plugin_t> { plugin.descriptor }
//
// The kit turns the Swift description into the C tables of
// `agraph_plugin.h` (allocated once, never freed: they must live as long as
// the library) and supplies the C function pointers (trampolines) that
// forward each ABI call to the Swift instance.
//
// Parity with the header (ABI 2.0, agraph_plugin.h): node types with any
// number of audio ports (`PluginNodeDescription(inputs:outputs:)`,
// `PluginBlock.input(port:_:)` …), live number/boolean/choice parameters,
// each output's layout tag (`outputLayout(_:port:)`), each input's tag
// (`PluginNodeSetup.inputPortLayouts`), virtualizers
// (`PluginNodeDescription.virtualizes`), `init`/`deinit`, and the
// extensions, each in the file named: plugin info (Extensions.swift), the
// output route's plugin side (Extensions.swift), decoders
// (`PluginDecoder`, `PluginStreamDecoder`: Decoder.swift, Extensions.swift),
// and the host extensions through `PluginHost` (log, log_rt, output route,
// latency changed, thread check: Host.swift). Not yet: decoder `configure`
// (agraph does not call it).
//
// Files, one role each: Description.swift (the static description),
// Node.swift (setup, block, `PluginNode`), Decoder.swift, Host.swift,
// Export.swift (the C tables), Trampolines.swift (the core's C functions),
// Extensions.swift (the extensions' C tables and lookup by id).
@_exported import CAGraphPlugin
import Synchronization
