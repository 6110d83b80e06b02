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
// Parity with the header (ABI 1.4): node types (realtime and, through
// `PluginDecoder`, worker-domain decoders with AGRAPH_EXT_DECODER), live
// number/boolean/choice parameters, `outputLayout` (ABI 1.1
// output_layout), plugin-wide details (AGRAPH_EXT_PLUGIN_INFO) and
// `init`/`deinit`, the plugin side of agraph.output-route/1
// (`outputRouteChanged`), and the host extensions through `PluginHost`
// (log, log_rt, output route, latency changed, thread check), and several
// audio ports per node (ABI 1.2: `PluginNodeDescription(inputs:outputs:)`,
// `PluginBlock.input(port:_:)` …, `outputLayout(_:port:)`), the stream
// decoder (ABI 1.3: `PluginStreamDecoder`), and renderers (ABI 1.4: the
// inputs' layout tags in `PluginNodeSetup.inputPortLayouts`, and
// `PluginNodeDescription.virtualizes`). Not yet: decoder `configure`
// (agraph does not call it).
@_exported import CAGraphPlugin
import Synchronization
