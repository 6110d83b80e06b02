import AudioGraphCore
import AudioGraphNodeAPI

/// `playlist`: plays a list of media files one after the other, gapless,
/// each through the `ffmpeg` decoder plugin (the same decoder as `media` →
/// `ffmpeg`), converted to the graph's rate by it and mixed to the
/// playlist's `layout` with the standard matrices. Everything but the
/// ring's last step runs on the worker thread (`PlaylistJob`); the list
/// can be edited while it plays (`PlaylistCommand`).
public struct PlaylistType: NodeType {
    public init() {}

    /// The decoder every item goes through.
    public static let decoderType = "ffmpeg"
    /// The layouts a playlist plays in (those with standard matrices).
    public static let layouts = ["mono", "stereo", "5.1", "7.1"]
    /// The decoder's channels: the most any item may have (7.1).
    static let decoderChannels = 8

    /// The fields of one item, in the graph and in a list file.
    public static let itemFields: [ParameterDescriptor] = [
        .init("path", .path, "The media file (anything FFmpeg opens); relative to the folder of the file that names it."),
        .init("start", .number, range: 0...31_536_000, default: .number(0), unit: "s", "Where the item starts playing."),
        .init("end", .number, range: 0...31_536_000, optional: true, unit: "s", "Where it stops (default: its end)."),
        .init("gain", .number, range: -96...24, default: .number(0), unit: "dB", "The item's gain."),
    ]

    static let items = ParameterDescriptor("items", .objectList(itemFields), optional: true,
        "The items, in order: [{\"path\": \"a.m4a\", \"start\": 1.5, \"end\": 60, \"gain\": -3}, …] (or give \"file\").")

    public let descriptor = NodeDescriptor(
        typeID: "playlist", role: .source,
        summary: "Plays media files one after the other with no gap (each through the ffmpeg decoder, converted to the graph's rate and mixed to the playlist's layout); edited live with the playlist command.",
        inputs: .none,
        parameters: [
            PlaylistType.items,
            .init("file", .path, optional: true,
                  "A JSON file of items instead of \"items\": an array of the same item objects (or {\"items\": […]}); paths in it resolve against its folder."),
            .init("layout", .choice(PlaylistType.layouts), default: .string("stereo"),
                  "The playlist's output layout; items of other layouts are mixed to it (ITU-R BS.775 downmix, standard upmix)."),
            .init("loop", .boolean, default: .boolean(false), "Start again with the first item after the last (no end of stream)."),
            .init("bufferTime", .number, range: 0.01...60, default: .number(0.5), unit: "s",
                  "How much audio the ring between the decoder and the audio thread holds."),
            .init("transport", .choice(TransportMode.names), default: .string(TransportMode.free.rawValue),
                  TransportMode.parameterHelp + " Transport frame F plays the list as if it had played from its first item for F frames (each item from its start to its end or the length its container gives; with loop, wrapped when every length is known)."),
            .init("onError", .choice(["fail", "skip"]), default: .string("fail"),
                  "Damaged items (packets lost from the container, frames the decoder conceals): fail (an offline render stops there and exits non-zero, naming each damaged item's file and what was concealed) or skip (conceal it with a warning and go on). Live playback conceals either way. An item that cannot be opened at all is passed over with a warning either way."),
        ],
        domain: .background)

    public func isEndless(_ p: NodeParameters) -> Bool { p.boolean("loop") == true }

    /// The items as the parameters give them, or why they cannot be read.
    /// [main-thread]
    static func entries(_ p: NodeParameters, directory: String) -> Result<PlaylistEntries, PlaylistError> {
        switch (p.objectList("items"), p.string("file")) {
        case (let objects?, nil): .success(PlaylistEntries.fromGraph(objects, directory: directory))
        case (nil, let file?): PlaylistEntries.fromFile(GraphPaths.resolve(file, against: directory), fields: items)
        case (_?, _?): .failure(PlaylistError("give \"items\" or \"file\", not both"))
        case (nil, nil): .failure(PlaylistError("give \"items\" (a list of {\"path\", \"start\", \"end\", \"gain\"}) or \"file\" (a JSON file of them)"))
        }
    }

    /// The decoder type of the registry, or why there is none.
    static func decoder(in registry: NodeRegistry) -> Result<any FrameDecoderType, PlaylistError> {
        guard let t = registry[decoderType] as? any FrameDecoderType, !t.descriptor.inputCodecs.isEmpty else {
            let note = registry.unavailableNote.map { "; \($0)" } ?? ""
            return .failure(PlaylistError("a playlist decodes its items with the \(decoderType) decoder plugin (libAGraphFFmpegPlugin.so), which is not loaded\(note)"))
        }
        return .success(t)
    }

    /// [main-thread | control-thread; validation resolves on the thread that validates]
    public func resolve(_ c: ResolveContext) -> StreamFormat? {
        ThreadRole.check(.main, .control)
        guard let layout = c.parameters.string("layout").flatMap(ChannelLayout.init(rawValue:)),
              let channels = layout.channelCount else { return nil }
        if let problem = RingBudget.check(seconds: c.parameters.number("bufferTime") ?? 0.5, sampleRate: c.sampleRate,
                                          channels: channels, parameter: "bufferTime") {
            c.error(parameter: "bufferTime", problem)
        }
        // Items or a file refused already (a field's type or range): their
        // errors say it all.
        for name in ["items", "file"] where c.writtenParameters.contains(name) && c.parameters[name] == nil { return nil }
        let decoder: any FrameDecoderType
        switch Self.decoder(in: c.registry) {
        case .success(let d): decoder = d
        case .failure(let e): c.error(e.message); return nil
        }
        let list: PlaylistEntries
        switch Self.entries(c.parameters, directory: c.directory) {
        case .success(let l): list = l
        case .failure(let e):
            if c.parameters.string("file") != nil { c.error(parameter: "file", e.message) } else { c.error(e.message) }
            return nil
        }
        if list.entries.isEmpty {
            c.error(parameter: list.listFile == nil ? "items" : "file", "the playlist has no items")
        }
        let target = PlaylistItemSource.Target(layout: layout, sampleRate: c.sampleRate, decoder: decoder.descriptor.typeID,
                                               codecs: decoder.descriptor.inputCodecs)
        for entry in list.entries {
            do {
                _ = try PlaylistItemSource.open(entry.item, for: target)
            } catch {
                if let place = list.place(of: entry, field: error.field) {
                    c.error(parameter: "file", "\(place): \(error.message)")
                } else {
                    c.error(parameter: "items", path: Array(entry.pointer.tokens.dropFirst()) + [error.field], error.message)
                }
            }
        }
        return StreamFormat(channels: channels, sampleRate: c.sampleRate, layout: layout)
    }

    /// [main-thread]
    public func makeNode(_ c: InstanceContext) throws -> any RenderNode {
        ThreadRole.check(.main)
        guard let layout = c.parameters.string("layout").flatMap(ChannelLayout.init(rawValue:)) else {
            throw EngineError(nodeID: c.nodeID, "no layout")
        }
        let list: PlaylistEntries
        let decoderType: any FrameDecoderType
        do {
            list = try Self.entries(c.parameters, directory: c.directory).get()
            decoderType = try Self.decoder(in: c.registry).get()
        } catch {
            throw EngineError(nodeID: c.nodeID, error.message)
        }
        let decoder = try decoderType.makeFrameDecoder(nodeID: c.nodeID, channels: Self.decoderChannels, sampleRate: c.sampleRate)
        let target = PlaylistItemSource.Target(layout: layout, sampleRate: c.sampleRate, decoder: decoderType.descriptor.typeID,
                                               codecs: decoderType.descriptor.inputCodecs)
        let bufferFrames = try FrameTime.frames(seconds: c.parameters.number("bufferTime") ?? 0.5, sampleRate: c.sampleRate)
        return PlaylistNode(nodeID: c.nodeID, items: list.entries.map(\.item), target: target, decoder: decoder,
                            loop: c.parameters.boolean("loop") ?? false, bufferFrames: bufferFrames,
                            transportMode: TransportMode(rawValue: c.parameters.string("transport") ?? "") ?? .free,
                            failsOnDamage: !c.live && c.parameters.string("onError") != "skip")
    }
}
