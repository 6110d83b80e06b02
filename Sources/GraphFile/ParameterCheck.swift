/// Type- and range-checks parameter values as a file writes them: the
/// validator checks every node's parameters with it, and a node type the
/// values of a file it reads (a playlist's list file). Each problem goes to
/// `report` with the JSON pointer of the bad value. [any-thread]
public struct ParameterCheck {
    let report: (JSONPointer, String) -> Void

    /// - Parameter report: called once per problem: where, and what is wrong.
    public init(report: @escaping (JSONPointer, String) -> Void) {
        self.report = report
    }

    /// A JSON value as a message quotes it.
    public static func describe(_ v: JSONValue) -> String {
        switch v.kind {
        case .number(let d, _): ParameterValue.number(d).description
        case .string(let s): "\"\(s)\""
        case .bool(let b): String(b)
        default: v.typeName
        }
    }

    static func rangeText(_ r: ClosedRange<Double>, unit: String?) -> String {
        let u = unit.map { " \($0)" } ?? ""
        return "\(ParameterValue.number(r.lowerBound))…\(ParameterValue.number(r.upperBound))\(u)"
    }

    /// Type- and range-checks one value; reports and returns nil when wrong.
    public func check(_ v: JSONValue, against p: ParameterDescriptor, pointer: JSONPointer) -> ParameterValue? {
        func wrongType() -> ParameterValue? {
            report(pointer, "\"\(p.name)\" must be \(p.type.name.hasPrefix("one of") ? "" : "a ")\(p.type.name); found \(v.typeName) \(Self.describe(v))")
            return nil
        }
        func inRange(_ d: Double, element: Int?) -> Bool {
            guard let r = p.range, !r.contains(d) else { return true }
            let ptr = element.map { pointer.appending($0) } ?? pointer
            report(ptr, "\"\(p.name)\"\(element.map { "[\($0)]" } ?? "") = \(ParameterValue.number(d)) is out of range; allowed: \(Self.rangeText(r, unit: p.unit))")
            return false
        }
        switch p.type {
        case .number, .integer:
            guard let d = v.number else { return wrongType() }
            if p.type == .integer, d != d.rounded() {
                report(pointer, "\"\(p.name)\" must be a whole number; found \(Self.describe(v))")
                return nil
            }
            return inRange(d, element: nil) ? .number(d) : nil
        case .boolean:
            guard let b = v.bool else { return wrongType() }
            return .boolean(b)
        case .string, .path, .outputPath:
            guard let s = v.string else { return wrongType() }
            if s.utf8.contains(0) {
                report(pointer, "\"\(p.name)\" contains a NUL character (\\u0000), which no file name or C string can hold")
                return nil
            }
            if p.type != .string, s.isEmpty {
                report(pointer, "\"\(p.name)\" must be a non-empty path")
                return nil
            }
            return .string(s)
        case .choice(let options):
            guard let s = v.string else { return wrongType() }
            guard options.contains(s), !s.utf8.contains(0) else {
                let hint = closestMatch(to: s, in: options).map { "did you mean \"\($0)\"? " } ?? ""
                report(pointer, "\"\(p.name)\" = \"\(s)\" is not allowed; \(hint)choose one of: \(options.joined(separator: ", "))")
                return nil
            }
            return .string(s)
        case .numberList:
            guard let list = v.array else { return wrongType() }
            var out: [Double] = []
            var ok = true
            for (i, e) in list.enumerated() {
                guard let d = e.number else {
                    report(pointer.appending(i), "\"\(p.name)\"[\(i)] must be a number; found \(e.typeName) \(Self.describe(e))")
                    ok = false
                    continue
                }
                if !inRange(d, element: i) { ok = false }
                out.append(d)
            }
            return ok ? .numberList(out) : nil
        case .booleanList:
            guard let list = v.array else { return wrongType() }
            var out: [Bool] = []
            for (i, e) in list.enumerated() {
                guard let b = e.bool else {
                    report(pointer.appending(i), "\"\(p.name)\"[\(i)] must be a boolean; found \(e.typeName) \(Self.describe(e))")
                    return nil
                }
                out.append(b)
            }
            return .booleanList(out)
        case .stringList:
            guard let list = v.array else { return wrongType() }
            var out: [String] = []
            for (i, e) in list.enumerated() {
                guard let str = e.string, !str.isEmpty, !str.utf8.contains(0) else {
                    report(pointer.appending(i), "\"\(p.name)\"[\(i)] must be a non-empty string; found \(e.typeName) \(Self.describe(e))")
                    return nil
                }
                out.append(str)
            }
            return .stringList(out)
        case .channelList:
            guard let list = v.array else { return wrongType() }
            var out: [ChannelSelector] = []
            var ok = true
            for (i, e) in list.enumerated() {
                if let d = e.number {
                    guard d == d.rounded(), d >= 0, d < 1e9 else {
                        report(pointer.appending(i), "\"\(p.name)\"[\(i)] = \(Self.describe(e)) is not a channel index; indexes are whole numbers from 0")
                        ok = false
                        continue
                    }
                    if !inRange(d, element: i) { ok = false; continue }
                    out.append(.index(Int(d)))
                } else if let str = e.string, !str.isEmpty, !str.utf8.contains(0) {
                    out.append(.name(str))
                } else {
                    report(pointer.appending(i), "\"\(p.name)\"[\(i)] must be a channel index (0, 1, …) or a channel name (\"L\", \"C\", …); found \(e.typeName) \(Self.describe(e))")
                    ok = false
                }
            }
            return ok ? .channelList(out) : nil
        case .indexOrWord(let words):
            if let str = v.string, words.contains(str) { return .string(str) }
            if let d = v.number, d == d.rounded(), d >= 0, d < 1e9 {
                return inRange(d, element: nil) ? .number(d) : nil
            }
            report(pointer, "\"\(p.name)\" must be an index (0, 1, …) or \(words.map { "\"\($0)\"" }.joined(separator: " or ")); found \(v.typeName) \(Self.describe(v))")
            return nil
        case .objectList(let fields):
            guard let list = v.array else { return wrongType() }
            var out: [[String: ParameterValue]] = []
            var ok = true
            for (i, e) in list.enumerated() {
                if let object = checkObject(e, fields: fields, of: p, index: i, pointer: pointer.appending(i)) {
                    out.append(object)
                } else {
                    ok = false
                }
            }
            return ok ? .objectList(out) : nil
        case .numberMatrix:
            guard let rows = v.array else { return wrongType() }
            var out: [[Double]] = []
            var ok = true
            for (i, row) in rows.enumerated() {
                guard let list = row.array else {
                    report(pointer.appending(i), "\"\(p.name)\"[\(i)] must be an array of numbers (one row); found \(row.typeName) \(Self.describe(row))")
                    ok = false
                    continue
                }
                var r: [Double] = []
                for (j, e) in list.enumerated() {
                    guard let d = e.number else {
                        report(pointer.appending(i).appending(j), "\"\(p.name)\"[\(i)][\(j)] must be a number; found \(e.typeName) \(Self.describe(e))")
                        ok = false
                        continue
                    }
                    if let range = p.range, !range.contains(d) {
                        report(pointer.appending(i).appending(j), "\"\(p.name)\"[\(i)][\(j)] = \(ParameterValue.number(d)) is out of range; allowed: \(Self.rangeText(range, unit: p.unit))")
                        ok = false
                    }
                    r.append(d)
                }
                out.append(r)
            }
            return ok ? .numberMatrix(out) : nil
        }
    }

    /// One object of an `objectList`: every field checked as a parameter
    /// of its own (named `list[i].field` in messages), unknown fields
    /// refused, missing ones defaulted or reported.
    private func checkObject(_ v: JSONValue, fields: [ParameterDescriptor], of p: ParameterDescriptor, index i: Int,
                             pointer: JSONPointer) -> [String: ParameterValue]? {
        let names = fields.map(\.name)
        guard let object = v.object else {
            report(pointer, "\"\(p.name)\"[\(i)] must be an object with \(names.map { "\"\($0)\"" }.joined(separator: ", ")); found \(v.typeName) \(Self.describe(v))")
            return nil
        }
        var out: [String: ParameterValue] = [:]
        var ok = true
        for (key, value) in object {
            guard var field = fields.first(where: { $0.name == key }) else {
                let hint = closestMatch(to: key, in: names).map { "did you mean \"\($0)\"? " } ?? ""
                report(pointer.appending(key), "\"\(p.name)\"[\(i)] has no field \"\(key)\"; \(hint)its fields: \(names.joined(separator: ", "))")
                ok = false
                continue
            }
            field.name = "\(p.name)[\(i)].\(field.name)"
            if let typed = check(value, against: field, pointer: pointer.appending(key)) { out[key] = typed } else { ok = false }
        }
        for field in fields where object[field.name] == nil {
            if let d = field.defaultValue {
                out[field.name] = d
            } else if field.isRequired {
                report(pointer, "\"\(p.name)\"[\(i)] has no \"\(field.name)\" (\(field.type.name)\(field.unit.map { " in \($0)" } ?? "")): \(field.summary)")
                ok = false
            }
        }
        return ok ? out : nil
    }
}
