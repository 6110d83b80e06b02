extension ValidatedGraph {
    /// The seconds an offline render will last when every source says how
    /// long it is (a tone's `duration`, a `file`'s length less its `start`,
    /// the `end` less the `start` of a source that stops there, like
    /// `media`): the longest of them. nil when a source's length is not
    /// known. [main-thread; opens the graph's input files]
    public var knownSeconds: Double? {
        ThreadRole.check(.main)
        var longest = 0.0
        for n in nodes where n.inputs.isEmpty {
            if let seconds = n.parameters.number("duration") {
                longest = max(longest, seconds)
            } else if n.parameters.boolean("loop") != true, let end = n.parameters.number("end") {
                longest = max(longest, end - (n.parameters.number("start") ?? 0))
            } else if n.descriptor.typeID == "file", n.parameters.boolean("loop") != true, let path = n.parameters.string("path"),
                      let file = try? SoundFile(reading: GraphPaths.resolve(path, against: directory)), file.isLengthKnown {
                let seconds = Double(file.frames) / file.sampleRate - (n.parameters.number("start") ?? 0)
                try? file.close()
                longest = max(longest, seconds)
            } else {
                return nil
            }
        }
        return longest
    }
}
