/// The random draws of X. [any-thread]
public enum ABXDraw {
    /// SplitMix64 (Steele, Lea, Flood 2014) of `seed`, one draw per trial:
    /// true (X is B) when the draw's top bit is 1.
    public static func draws(seed: UInt64, count: Int) -> [Bool] {
        var state = seed
        return (0..<count).map { _ in
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            z ^= z >> 31
            return z >> 63 == 1
        }
    }
}
