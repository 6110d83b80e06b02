import AudioGraphCore
import AudioGraphNodeAPI
import GraphFile

/// A playlist's items, as the graph gives them (`items`) or as a list
/// file holds them (`file`: a JSON array of the same item objects, or an
/// object whose `items` is that array). Paths resolve against the folder of
/// the file that names them.
struct PlaylistEntries {
    /// One item and where it is written, for messages.
    struct Entry {
        var item: PlaylistItem
        /// In the graph: tokens below the node's `params` (["items", "2"]);
        /// in a list file: its pointer there.
        var pointer: JSONPointer
        /// In a list file: the item's line and column.
        var location: SourceLocation?
    }

    var entries: [Entry]
    /// The list file, when the items come from one.
    var listFile: String?

    /// Where an item's field stands, in words: `list.json:4:9: /2/start`,
    /// or nil for an item of the graph (the diagnostic has the pointer).
    func place(of entry: Entry, field: String) -> String? {
        guard let listFile else { return nil }
        return "\(listFile):\(entry.location.map { "\($0): " } ?? "")\(entry.pointer.appending(field).description)"
    }

    /// The items of a graph's `items` parameter, paths resolved against
    /// `directory`. [any-thread]
    static func fromGraph(_ objects: [[String: ParameterValue]], directory: String) -> PlaylistEntries {
        PlaylistEntries(entries: objects.enumerated().compactMap { i, object in
            item(object, directory: directory).map { Entry(item: $0, pointer: JSONPointer(["items", String(i)])) }
        }, listFile: nil)
    }

    /// Reads a list file and checks every item's fields as the graph's
    /// `items` are checked; problems come back in words, each with the
    /// file, line:column and pointer. [main-thread | worker-thread]
    static func fromFile(_ path: String, fields: ParameterDescriptor) -> Result<PlaylistEntries, PlaylistError> {
        let bytes: [UInt8]
        do { bytes = try FileChecks.readRegularFile(path, maximumBytes: FileChecks.maximumGraphFileBytes) } catch {
            return .failure(PlaylistError("cannot read the list file: \(error.reason)"))
        }
        let root: JSONValue
        do { root = try JSONParser.parse(bytes) } catch {
            return .failure(PlaylistError("\(path):\(error.location): malformed JSON: \(error.message)"))
        }
        var listPointer = JSONPointer.root
        var list = root
        if let object = root.object {
            guard let items = object["items"], object.count == 1 else {
                return .failure(PlaylistError("\(path): a list file is an array of items, or an object with just \"items\""))
            }
            listPointer = listPointer.appending("items")
            list = items
        }
        var problems: [String] = []
        let check = ParameterCheck { pointer, message in
            let at = root.value(at: pointer)?.location ?? list.location
            problems.append("\(path):\(at): \(pointer.description): \(message)")
        }
        guard case .objectList(let objects)? = check.check(list, against: fields, pointer: listPointer) else {
            return .failure(PlaylistError(problems.isEmpty ? "\(path): no items" : problems.joined(separator: "; ")))
        }
        let directory = GraphPaths.folder(of: path)
        let entries = objects.enumerated().compactMap { i, object -> Entry? in
            let pointer = listPointer.appending(i)
            return item(object, directory: directory).map { Entry(item: $0, pointer: pointer, location: root.value(at: pointer)?.location) }
        }
        return .success(PlaylistEntries(entries: entries, listFile: path))
    }

    /// An item from its checked fields.
    static func item(_ object: [String: ParameterValue], directory: String) -> PlaylistItem? {
        guard case .string(let path)? = object["path"] else { return nil }
        var item = PlaylistItem(path: GraphPaths.resolve(path, against: directory))
        if case .number(let v)? = object["start"] { item.start = v }
        if case .number(let v)? = object["end"] { item.end = v }
        if case .number(let v)? = object["gain"] { item.gain = v }
        return item
    }
}
