/// Limits and choices for reading a container file.
public struct LoadOptions: Sendable, Hashable {
    /// Files larger than this are refused with `file_too_large` (default 16 MiB).
    public var maximumFileSize: Int
    /// Arrays and maps nested deeper than this are refused with `nesting_too_deep` (default 256).
    public var maximumDepth: Int
    /// Use this container ID instead of the one from the file name or the content.
    public var containerID: String?
    /// Treat the container as built for this platform instead of deciding from its content (see
    /// ``ContainerPlatform``): it decides how string conditions compare an undefined value.
    public var platform: ContainerPlatform?
    /// Record the line and column of every value (lint wants them; running does not).
    public var recordPositions: Bool

    /// Creates options; every parameter has a default.
    public init(
        maximumFileSize: Int = 16 * 1024 * 1024,
        maximumDepth: Int = 256,
        containerID: String? = nil,
        recordPositions: Bool = false,
        platform: ContainerPlatform? = nil
    ) {
        self.platform = platform
        self.maximumFileSize = maximumFileSize
        self.maximumDepth = maximumDepth
        self.containerID = containerID
        self.recordPositions = recordPositions
    }
}
