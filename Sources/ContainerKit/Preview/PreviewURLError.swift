/// Why a string is not a GTM preview URL: a ``ContainerError`` (the module's one error type) with one of the
/// codes below. Messages name the offending part in quotes but never the auth token.
public typealias PreviewURLError = ContainerError

extension ContainerError.Code {
    /// The string does not follow the preview URL grammar.
    public static let malformed = ContainerError.Code(rawValue: "malformed_preview_url")
    // `invalidContainerID` ("invalid_container_id"): the `id` parameter breaks the `GTM-XXXX` pattern.
}
