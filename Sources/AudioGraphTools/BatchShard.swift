/// `--shard I/N` of `agraph render --each`: inputs I, I+N, I+2N… of the
/// list, in the order given, so that N machines of a job array each render
/// their own part of one catalogue without talking to each other.
public struct BatchShard: Equatable, Sendable {
    public let index: Int
    public let count: Int

    /// Shard `index` of `count`; nil unless 0 ≤ index < count. [any-thread]
    public init?(index: Int, count: Int) {
        guard count >= 1, (0..<count).contains(index) else { return nil }
        self.index = index
        self.count = count
    }

    /// The elements of this shard, in order. [any-thread]
    public func select<T>(_ items: [T]) -> [T] {
        stride(from: index, to: items.count, by: count).map { items[$0] }
    }

    /// `I/N`. [any-thread]
    public var description: String { "\(index)/\(count)" }
}
