/// What entering preview asks a ``PreviewSource`` for: one draft container version.
///
/// The auth token is a secret: ``description`` and every message ContainerKit writes show
/// `gtm_auth=<redacted>` instead.
public struct PreviewRequest: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The container ID, already checked against the `GTM-XXXX` pattern.
    public var containerID: String
    /// The `gtm_auth` token that authorises the draft.
    public var authToken: String
    /// The `gtm_preview` value: digits that name the draft version or environment.
    public var previewNumber: String
    /// Whether `gtm_debug=x` asked for debug mode.
    public var debug: Bool

    /// Creates a request.
    public init(containerID: String, authToken: String, previewNumber: String, debug: Bool = false) {
        self.containerID = containerID
        self.authToken = authToken
        self.previewNumber = previewNumber
        self.debug = debug
    }

    /// `id=GTM-XXXX&gtm_auth=<redacted>&gtm_preview=12[&gtm_debug=x]`: the query without the token.
    public var description: String {
        "id=\(containerID)&gtm_auth=<redacted>&gtm_preview=\(previewNumber)" + (debug ? "&gtm_debug=x" : "")
    }

    /// The same as ``description``: the token stays out of debug output too.
    public var debugDescription: String { description }
}

/// Where draft containers for preview mode come from: GTM's `/r` endpoint with the preview's query
/// (``HTTPContainerSource``), or a local directory of drafts (``DirectoryContainerSource``).
///
/// ```swift
/// struct FixedDraft: PreviewSource {
///     let bytes: [UInt8]
///     func fetchDraft(_ request: PreviewRequest) async throws(ContainerFetchError) -> [UInt8] { bytes }
/// }
/// ```
public protocol PreviewSource: Sendable {
    /// Fetches the draft container `request` names; the bytes are a container file (JSON or property list).
    func fetchDraft(_ request: PreviewRequest) async throws(ContainerFetchError) -> [UInt8]
}
