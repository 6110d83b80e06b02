import Foundation

/// Media the tests read, kept in the repository (`Tests/Media/`) and found
/// from the package root, so a fresh clone with nothing beside it has them.
public enum TestMedia {
    /// The package root: this file is `Tests/TestSupport/TestMedia.swift`.
    public static let packageRoot: String = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().path

    /// `Tests/Media/NAME`.
    public static func path(_ name: String) -> String { packageRoot + "/Tests/Media/" + name }

    /// AC-4 Immersive Stereo sync frames with CRC, about 36 s (Dolby's
    /// DAAPlay sample, BSD 3-clause: `Tests/Media/ChannelCheck.LICENSE.txt`).
    public static var channelCheck: String { path("ChannelCheck.ac4") }
}
