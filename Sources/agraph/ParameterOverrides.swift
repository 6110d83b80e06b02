import ArgumentParser
import AudioGraph

/// `--set NODE.PARAM=VALUE` (and `NODE.PARAM[i]=VALUE`), shared by
/// `render`, `run` and `validate`: the command line's parameter overrides.
/// Only the syntax is checked here (a usage error, exit 64); the node, the
/// parameter and the value are checked by the validator like the file's own
/// (`GraphValidator.validate(file:overrides:)`), and every problem they
/// cause ends with "(from --set …)".
enum ParameterOverrides {
    static let help = ArgumentHelp(
        "Override a node parameter before validation: NODE.PARAM=VALUE or NODE.PARAM[i]=VALUE (repeatable; the last wins). "
            + "VALUE is JSON when it parses (-6, true, [0,-6], \"text\"), else a string; relative paths resolve against the working directory.",
        valueName: "NODE.PARAM=VALUE")

    /// Parses one `--set` (or `--each`) item; `flag` names the option in
    /// messages. [main-thread]
    /// - Throws: `ValidationError` naming the flag and the item when it is
    ///   not `NODE.PARAM=VALUE`.
    static func parse(_ item: String, flag: String = "--set") throws(ValidationError) -> ParameterOverride {
        guard let equals = item.firstIndex(of: "=") else {
            throw ValidationError("\(flag) '\(item)': expected NODE.PARAM=VALUE, e.g. \(flag) g.gain=-6")
        }
        let address: ParameterAddress
        do {
            address = try ParameterAddress(parsing: String(item[..<equals]))
        } catch {
            throw ValidationError("\(flag) '\(item)': \(error.description)")
        }
        return ParameterOverride(node: address.node, parameter: address.parameter, element: address.element,
                                 text: String(item[item.index(after: equals)...]), origin: "\(flag) \(item)",
                                 directory: GraphPaths.currentDirectory())
    }

    /// Parses every `--set` item, in order. [main-thread]
    static func parse(_ items: [String]) throws(ValidationError) -> [ParameterOverride] {
        var overrides: [ParameterOverride] = []
        for item in items { overrides.append(try parse(item)) }
        return overrides
    }
}
