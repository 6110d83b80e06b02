/// How many threads render a live graph's cycle: a graph's top-level
/// `"threads"` and `agraph run --threads`. 1 (the default): JACK's process
/// thread alone. N: that thread and N − 1 helpers, the graph's independent
/// branches at the same time. `auto`: as many as the graph has independent
/// branches, up to the number of CPUs, when it has at least two and the
/// machine at least two CPUs; else 1. [any-thread; a value]
public enum GraphThreads: Sendable, Equatable, CustomStringConvertible {
    case count(Int)
    case auto

    /// The most threads a graph may ask for.
    public static let maximum = 64

    /// "auto" or a whole number from 1 to `maximum`; nil for anything else.
    public init?(word: String) {
        if word == "auto" {
            self = .auto
        } else if let n = Int(word), (1...Self.maximum).contains(n) {
            self = .count(n)
        } else {
            return nil
        }
    }

    public var description: String {
        switch self {
        case .auto: return "auto"
        case .count(let n): return String(n)
        }
    }

    /// The threads to render on, for a graph with `branches` independent
    /// branches (`Engine.independentBranches`) on `processors` CPUs.
    public func resolved(branches: Int, processors: Int) -> Int {
        switch self {
        case .count(let n): return n
        case .auto: return branches >= 2 && processors >= 2 ? min(branches, processors) : 1
        }
    }

    /// What `"threads"` and `--threads` take, for messages.
    public static let expected = "a whole number of threads from 1 to \(maximum) (1, the default: JACK's process thread alone) or \"auto\" (one per independent branch, up to the number of CPUs)"
}
