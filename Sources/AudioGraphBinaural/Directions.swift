import AudioGraphCore
#if canImport(Glibc)
import Glibc
#endif

/// Where one input channel plays from: a direction, or the LFE.
///
/// Angles in degrees, SOFA's (and ITU-R BS.2051's) convention: azimuth
/// counter-clockwise seen from above, 0° straight ahead, positive to the
/// left; elevation up from the horizontal plane.
public struct SpeakerDirection: Sendable, Equatable, CustomStringConvertible {
    public var azimuth: Double
    public var elevation: Double
    /// The low-frequency effects channel: not rendered through HRTFs but
    /// added to both ears with the node's `lfe` gain.
    public var isLFE: Bool

    public init(azimuth: Double, elevation: Double = 0, isLFE: Bool = false) {
        self.azimuth = azimuth
        self.elevation = elevation
        self.isLFE = isLFE
    }

    public static let lfe = SpeakerDirection(azimuth: 0, isLFE: true)

    public var description: String {
        isLFE ? "LFE" : "(\(ParameterValueText.number(azimuth))°, \(ParameterValueText.number(elevation))°)"
    }
}

/// Short number text for messages (`30`, `-110`, `12.5`).
enum ParameterValueText {
    static func number(_ v: Double) -> String {
        v == v.rounded() && abs(v) < 1e9 ? String(Int(v)) : String(v)
    }
}

/// The loudspeaker directions of the project's layouts, after ITU-R
/// BS.2051-3 (Table 3, nominal azimuths and elevations):
///
/// | layout | BS.2051 system | channels (azimuth°) |
/// |---|---|---|
/// | mono | – | M 0 |
/// | stereo | A (0+2+0) | L +30, R −30 |
/// | 5.1 | B (0+5+0) | L +30, R −30, C 0, LFE, Ls +110, Rs −110 |
/// | 7.1 | I (0+7+0) | L +30, R −30, C 0, LFE, Ls (side) +90, Rs −90, Lb (back) +135, Rb −135 |
///
/// Every elevation is 0°. The 7.1 labels are the project's (`Ls`/`Rs`
/// the side pair, `Lb`/`Rb` the back pair: `ChannelLayout.channelLabels`),
/// BS.2051's M+090/M−090 and M+135/M−135.
public enum StandardDirections {
    /// The directions of `layout`'s channels in order, or nil for a layout
    /// without standard positions (`discrete`, `binaural`). [any-thread]
    public static func directions(for layout: ChannelLayout) -> [SpeakerDirection]? {
        switch layout {
        case .mono: [.init(azimuth: 0)]
        case .stereo: [.init(azimuth: 30), .init(azimuth: -30)]
        case .surround51: [.init(azimuth: 30), .init(azimuth: -30), .init(azimuth: 0), .lfe,
                           .init(azimuth: 110), .init(azimuth: -110)]
        case .surround71: [.init(azimuth: 30), .init(azimuth: -30), .init(azimuth: 0), .lfe,
                           .init(azimuth: 90), .init(azimuth: -90), .init(azimuth: 135), .init(azimuth: -135)]
        case .binaural, .discrete: nil
        }
    }
}

/// The listener's head orientation, in degrees:
/// - `yaw`: turning about the vertical axis; positive turns the head to
///   the left (counter-clockwise seen from above, the sense of SOFA's
///   azimuth). A source in front then sits to the right of the nose: yaw
///   +90° puts it at azimuth −90°, at the right ear.
/// - `pitch`: about the interaural axis; positive lifts the nose (looking
///   up), so a source in front moves below the nose.
/// - `roll`: about the front axis; positive tilts the head to the right
///   (right ear down, left ear up), so a source on the left is heard
///   from below the head and one on the right from above.
///
/// Applied as yaw, then pitch about the turned interaural axis, then roll
/// about the resulting front axis (intrinsic z-y′-x″, as aircraft): the head
/// rotation is R = Rz(yaw) · Ry(−pitch) · Rx(roll) in SOFA's Cartesian axes
/// (x front, y left, z up), and a source at room direction v is rendered
/// from the head-relative direction Rᵀ v (the inverse rotation).
public struct HeadOrientation: Sendable, Equatable {
    public var yaw: Double
    public var pitch: Double
    public var roll: Double

    public init(yaw: Double = 0, pitch: Double = 0, roll: Double = 0) {
        self.yaw = yaw
        self.pitch = pitch
        self.roll = roll
    }

    /// The direction (azimuth, elevation) of a source at room direction
    /// `azimuth`, `elevation` as heard by a head with this orientation.
    /// Azimuth in −180…180. [any-thread]
    public func relative(azimuth: Double, elevation: Double) -> (azimuth: Double, elevation: Double) {
        if yaw == 0 && pitch == 0 && roll == 0 { return (Self.wrap(azimuth), elevation) }
        let d = Double.pi / 180
        let (a, e) = (azimuth * d, elevation * d)
        let v = (cos(e) * cos(a), cos(e) * sin(a), sin(e))
        // R = Rz(ψ) Ry(−θ) Rx(φ); Rᵀ v = Rx(−φ) Ry(θ) Rz(−ψ) v.
        let (cy, sy) = (cos(yaw * d), sin(yaw * d))
        let (cp, sp) = (cos(pitch * d), sin(pitch * d))
        let (cr, sr) = (cos(roll * d), sin(roll * d))
        // Rz(−ψ): turn the room the other way about z.
        let x1 = cy * v.0 + sy * v.1
        let y1 = -sy * v.0 + cy * v.1
        let z1 = v.2
        // Ry(θ) with Ry(β) = [[cos β, 0, sin β], [0, 1, 0], [−sin β, 0, cos β]].
        let x2 = cp * x1 + sp * z1
        let y2 = y1
        let z2 = -sp * x1 + cp * z1
        // Rx(−φ) with Rx(β) = [[1, 0, 0], [0, cos β, −sin β], [0, sin β, cos β]].
        let x3 = x2
        let y3 = cr * y2 + sr * z2
        let z3 = -sr * y2 + cr * z2
        let el = atan2(z3, (x3 * x3 + y3 * y3).squareRoot()) / d
        let az = (x3 * x3 + y3 * y3) < 1e-20 ? 0 : atan2(y3, x3) / d
        return (Self.wrap(az), el)
    }

    /// `degrees` in −180…180.
    static func wrap(_ degrees: Double) -> Double {
        var a = degrees.truncatingRemainder(dividingBy: 360)
        if a > 180 { a -= 360 }
        if a < -180 { a += 360 }
        return a
    }
}
