/// A node that measures its signal and shows the results by name, as the
/// control surface's `get NODE.NAME` reads them (`get loud.integrated`).
///
/// The audio thread publishes each value (e.g. through an `Atomic` holding
/// the bit pattern of a Double); readers never wait for it.
public protocol MeasuringNode: AnyObject {
    /// The names of the readings, in display order, each with its unit
    /// ("LUFS", "LU", "dBTP", "dB"). [any-thread]
    var readingNames: [(name: String, unit: String)] { get }
    /// The latest value of reading `name`; nil for a name not in
    /// `readingNames`. -inf where nothing was measured yet. [control-thread]
    func reading(_ name: String) -> Double?
}

/// A measuring node whose readings a live host publishes as events when
/// they change (an LV2 plugin's control outputs: meters, gain reduction,
/// latency). [any-thread]
public protocol ReadingPublishing: MeasuringNode {}
