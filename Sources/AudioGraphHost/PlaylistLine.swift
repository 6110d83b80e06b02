// The `playlist` console command's syntax:
//
//   playlist NODE add PATH [START [END [GAIN]]]
//   playlist NODE insert INDEX PATH [START [END [GAIN]]]
//   playlist NODE remove INDEX
//   playlist NODE move FROM TO
//   playlist NODE next | clear | list
//
// START and END in seconds of the file (END "-": to its end), GAIN in dB,
// indexes from 0. A PATH with spaces goes in double quotes ("my song.flac";
// \" and \\ inside them stand for " and \).

/// Parses `playlist` command lines. [any-thread]
enum PlaylistLine {
    static let usage = "playlist NODE add PATH [START [END [GAIN]]] | insert INDEX PATH [START [END [GAIN]]] | remove INDEX | move FROM TO | next | clear | list"

    static func parse(_ line: String) throws(ControlLineError) -> ControlCommand {
        let words = try split(line)
        guard words.count >= 3 else { throw ControlLineError("playlist takes a node and a command: \(usage)") }
        let node = words[1]
        let arguments = Array(words.dropFirst(3))
        let command: PlaylistCommand
        switch words[2] {
        case "add":
            command = .add(try item(arguments, "add"))
        case "insert":
            guard let first = arguments.first else { throw ControlLineError("playlist insert takes an index and a path: playlist NODE insert INDEX PATH [START [END [GAIN]]]") }
            command = .insert(try item(Array(arguments.dropFirst()), "insert"), at: try index(first, "insert"))
        case "remove":
            guard arguments.count == 1 else { throw ControlLineError("playlist remove takes an index: playlist NODE remove INDEX") }
            command = .remove(at: try index(arguments[0], "remove"))
        case "move":
            guard arguments.count == 2 else { throw ControlLineError("playlist move takes two indexes: playlist NODE move FROM TO") }
            command = .move(from: try index(arguments[0], "move"), to: try index(arguments[1], "move"))
        case "next", "clear", "list":
            guard arguments.isEmpty else { throw ControlLineError("'playlist NODE \(words[2])' takes nothing more") }
            command = words[2] == "next" ? .next : words[2] == "clear" ? .clear : .list
        default:
            throw ControlLineError("unknown playlist command '\(ControlLine.quoted(Substring(words[2])))'; \(usage)")
        }
        return .playlist(node: node, command)
    }

    /// PATH [START [END [GAIN]]], checked: times from 0, END after START
    /// ("-": none), GAIN from -96 to 24 dB.
    private static func item(_ words: [String], _ command: String) throws(ControlLineError) -> PlaylistItem {
        guard let path = words.first, !path.isEmpty else {
            throw ControlLineError("playlist \(command) takes a path: PATH [START [END [GAIN]]]")
        }
        guard words.count <= 4 else { throw ControlLineError("playlist \(command): too many words after the path: PATH [START [END [GAIN]]]") }
        guard !path.utf8.contains(0) else { throw ControlLineError("playlist \(command): the path holds a NUL character") }
        var item = PlaylistItem(path: path)
        if words.count > 1 {
            guard let start = FrameTime.parseSeconds(words[1]) else {
                throw ControlLineError("playlist \(command): START '\(ControlLine.quoted(Substring(words[1])))' is not a time in seconds (0 or more)")
            }
            item.start = start
        }
        if words.count > 2, words[2] != "-" {
            guard let end = FrameTime.parseSeconds(words[2]), end > item.start else {
                throw ControlLineError("playlist \(command): END '\(ControlLine.quoted(Substring(words[2])))' must be a time in seconds after START (or - for the item's end)")
            }
            item.end = end
        }
        if words.count > 3 {
            guard let gain = Double(words[3]), gain >= -96, gain <= 24 else {
                throw ControlLineError("playlist \(command): GAIN '\(ControlLine.quoted(Substring(words[3])))' must be a number of dB from -96 to 24")
            }
            item.gain = gain
        }
        return item
    }

    private static func index(_ word: String, _ command: String) throws(ControlLineError) -> Int {
        guard let i = Int(word), i >= 0 else {
            throw ControlLineError("playlist \(command): '\(ControlLine.quoted(Substring(word)))' is not an index (0, 1, …)")
        }
        return i
    }

    /// The line's words: whitespace separates them, except inside double
    /// quotes.
    static func split(_ line: String) throws(ControlLineError) -> [String] {
        var words: [String] = []
        var word = ""
        var inWord = false
        var quoted = false
        var escaped = false
        for c in line {
            if escaped {
                word.append(c)
                escaped = false
            } else if quoted {
                if c == "\\" { escaped = true } else if c == "\"" { quoted = false } else { word.append(c) }
            } else if c == "\"" {
                quoted = true
                inWord = true
            } else if c.isWhitespace {
                if inWord { words.append(word) }
                word = ""
                inWord = false
            } else {
                word.append(c)
                inWord = true
            }
        }
        guard !quoted else { throw ControlLineError("a double quote is not closed") }
        if inWord { words.append(word) }
        return words
    }
}
