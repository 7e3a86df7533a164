public import ContainerKit
public import Foundation

extension ContainerError.Code {
    /// A Braze REST endpoint that cannot be used: not an http(s) URL with a host, a port outside 1–65535, a user
    /// name or password, a query or a fragment.
    public static let invalidEndpoint = ContainerError.Code(rawValue: "invalid_endpoint")
    /// A Braze REST API key that cannot be used: empty, or with a space, a control character or a character outside
    /// ASCII inside it.
    public static let invalidAPIKey = ContainerError.Code(rawValue: "invalid_api_key")
    /// A number of objects per `/users/track` request that Braze does not allow, or that is not a number.
    public static let invalidObjectLimit = ContainerError.Code(rawValue: "invalid_object_limit")
}

extension BrazeUsersTrackDestination {
    /// Reads a Braze REST endpoint as people paste it: the instance's base URL from Braze's dashboard
    /// (`https://rest.iad-01.braze.com`), with or without a trailing `/`, or a whole API URL
    /// (`…/users/track`, `…/users/identify`), whose path is cut back to the base.
    ///
    /// - Throws: ``ContainerError`` with ``ContainerError/Code/invalidEndpoint`` saying what is wrong: not an
    ///   http(s) URL with a host, a port outside 1–65535, a user name or password in it (the REST API key is
    ///   given apart, never in the URL: the message shows the URL without them), a query or a fragment.
    public static func restEndpoint(parsing text: String) throws(ContainerError) -> URL {
        guard var components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            scheme == "http" || scheme == "https", components.host?.isEmpty == false
        else {
            throw ContainerError(
                .invalidEndpoint,
                "'\(redacted(text))' is not an http(s) URL such as https://rest.iad-01.braze.com"
            )
        }
        if let port = components.port, !(1...65535).contains(port) {
            throw ContainerError(.invalidEndpoint, "'\(redacted(text))': the port must be 1–65535, not \(port)")
        }
        guard components.user == nil, components.password == nil else {
            throw ContainerError(
                .invalidEndpoint,
                "'\(redacted(text))' holds a user name or password: the REST API key is given apart, not in the URL"
            )
        }
        guard components.query == nil, components.fragment == nil else {
            throw ContainerError(
                .invalidEndpoint,
                "'\(redacted(text))' has a query or a fragment ('?…', '#…'): give the endpoint alone"
            )
        }
        components.path = basePath(components.path)
        guard let url = components.url else {
            throw ContainerError(.invalidEndpoint, "'\(redacted(text))' is not a URL")
        }
        return url
    }

    /// The URL of the API `path` (`users/track`) under `endpoint`: one `/` between them however the endpoint
    /// ends, and an endpoint that already names an API (`…/users/track`) cut back to its base first.
    static func apiURL(_ path: String, under endpoint: URL) -> URL {
        guard var components = URLComponents(url: endpoint, resolvingAgainstBaseURL: true) else {
            return endpoint.appendingPathComponent(path)
        }
        components.path = basePath(components.path) + "/" + path
        return components.url ?? endpoint.appendingPathComponent(path)
    }

    /// `path` without trailing slashes and without a last `/users/track` or `/users/identify`.
    private static func basePath(_ path: String) -> String {
        var base = Substring(path)
        while base.hasSuffix("/") { base = base.dropLast() }
        for api in ["/users/track", "/users/identify"] where base.hasSuffix(api) {
            base = base.dropLast(api.count)
            while base.hasSuffix("/") { base = base.dropLast() }
        }
        return String(base)
    }

    /// Reads a REST API key as it comes from a secret: without the spaces and line break around it (a Kubernetes
    /// secret made from a file usually ends with a newline, which would have gone into every `Authorization`
    /// header).
    ///
    /// - Throws: ``ContainerError`` with ``ContainerError/Code/invalidAPIKey`` when nothing is left, or when a
    ///   space, a control character or a character outside ASCII is inside the key (the message never shows it).
    public static func restAPIKey(parsing text: String) throws(ContainerError) -> String {
        let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !key.isEmpty else {
            throw ContainerError(.invalidAPIKey, "the REST API key is empty")
        }
        guard key.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw ContainerError(
                .invalidAPIKey,
                "the REST API key holds a space, a control character or a character outside ASCII, which no key has"
            )
        }
        return key
    }

    /// `text` with a password it holds shown as `***`.
    private static func redacted(_ text: String) -> String {
        guard var components = URLComponents(string: text), components.password != nil else { return text }
        components.password = "***"
        return components.string ?? text
    }
}
