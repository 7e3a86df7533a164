import Foundation

/// A parsed GTM preview URL: enter preview of a draft, or exit it.
///
/// The grammar is the GTM mobile SDK's, matched on the percent-decoded string, parameters in this order:
///
/// ```
/// tagmanager.c.<app id>://preview/p?id=GTM-XXXX&gtm_auth=<token>&gtm_preview=<digits>[&gtm_debug=x]
/// tagmanager.c.<app id>://preview/p?id=GTM-XXXX&gtm_preview=          (exit preview)
/// ```
///
/// The app ID is letters, digits, `.`, `-`, `_` and `+`; the token is letters, digits, `-`, `_`, `.` and
/// `~` (what GTM issues); `gtm_preview` is 1 to 20 digits. Anything else is refused with a
/// ``PreviewURLError``. ``description`` shows the URL with `gtm_auth=<redacted>`.
///
/// ```swift
/// let url = try PreviewURL(parsing: "tagmanager.c.com.example://preview/p?id=GTM-XXXX&gtm_auth=a1&gtm_preview=3")
/// if case .enter(let request) = url.action { print(request) }   // id=GTM-XXXX&gtm_auth=<redacted>&gtm_preview=3
/// ```
public struct PreviewURL: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What the URL asks for.
    public enum Action: Sendable, Hashable {
        /// Preview the draft the request names.
        case enter(PreviewRequest)
        /// Return the container in preview to its live version.
        case exit
    }

    /// The longest string accepted, before decoding.
    public static let maximumLength = 2048
    /// The scheme prefix every preview URL starts with.
    public static let schemePrefix = "tagmanager.c."

    /// The app ID after `tagmanager.c.` (a bundle ID or package name).
    public var appID: String
    /// The container ID, `GTM-XXXX`.
    public var containerID: String
    /// Enter or exit.
    public var action: Action

    /// Whether the URL asks for debug mode (`gtm_debug=x`).
    public var isDebug: Bool {
        if case .enter(let request) = action { return request.debug }
        return false
    }

    /// The URL with the auth token redacted.
    public var description: String {
        let prefix = "\(PreviewURL.schemePrefix)\(appID)://preview/p?"
        switch action {
        case .enter(let request): return prefix + request.description
        case .exit: return prefix + "id=\(containerID)&gtm_preview="
        }
    }

    /// The same as ``description``.
    public var debugDescription: String { description }

    /// Parses `text`.
    /// - Throws: ``PreviewURLError`` saying which part breaks the grammar.
    public init(parsing text: String) throws(PreviewURLError) {
        guard text.utf8.count <= PreviewURL.maximumLength else {
            throw PreviewURLError(.malformed, "the url is longer than \(PreviewURL.maximumLength) bytes")
        }
        guard let decoded = text.removingPercentEncoding else {
            throw PreviewURLError(.malformed, "the url has an invalid percent-encoding")
        }
        guard decoded.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) else {
            throw PreviewURLError(.malformed, "the url has spaces, control or non-ascii characters")
        }
        guard decoded.hasPrefix(PreviewURL.schemePrefix) else {
            if decoded.hasPrefix("https://") || decoded.hasPrefix("http://") {
                // A web container's preview link (Tag Assistant, gtm.js with gtm_preview=env-…): not the SDK's.
                throw PreviewURLError(
                    .malformed,
                    "this is a web link, not a mobile preview url: the scheme must start with "
                        + "'\(PreviewURL.schemePrefix)' (the url GTM's Preview shows for a mobile container: "
                        + "tagmanager.c.<app id>://preview/p?id=GTM-XXXX&gtm_auth=…&gtm_preview=…)"
                )
            }
            throw PreviewURLError(.malformed, "the scheme must start with '\(PreviewURL.schemePrefix)'")
        }
        let afterPrefix = decoded.dropFirst(PreviewURL.schemePrefix.count)
        guard let separator = afterPrefix.range(of: "://") else {
            throw PreviewURLError(.malformed, "expected '://' after the scheme")
        }
        let appID = String(afterPrefix[..<separator.lowerBound])
        guard !appID.isEmpty, appID.allSatisfy(PreviewURL.isAppIDCharacter) else {
            throw PreviewURLError(
                .malformed,
                "the app id '\(PreviewURL.shown(appID))' is empty or has invalid characters"
            )
        }
        let rest = afterPrefix[separator.upperBound...]
        guard let question = rest.firstIndex(of: "?") else {
            throw PreviewURLError(.malformed, "expected '?' and the query after 'preview/p'")
        }
        let location = rest[..<question]
        let host = location.prefix { $0 != "/" }
        guard host == "preview" else {
            throw PreviewURLError(.malformed, "the host must be 'preview', not '\(PreviewURL.shown(host))'")
        }
        let path = location.dropFirst(host.count)
        guard path == "/p" else {
            throw PreviewURLError(.malformed, "the path must be '/p', not '\(PreviewURL.shown(path))'")
        }
        let parameters = rest[rest.index(after: question)...].split(separator: "&", omittingEmptySubsequences: false)
            .map { item -> (name: Substring, value: Substring?) in
                guard let eq = item.firstIndex(of: "=") else { return (item, nil) }
                return (item[..<eq], item[item.index(after: eq)...])
            }

        guard let first = parameters.first, first.name == "id", let id = first.value else {
            let name = parameters.first.map { PreviewURL.shown($0.name) } ?? ""
            throw PreviewURLError(.malformed, "the first parameter must be 'id', not '\(name)'")
        }
        guard ContainerLoader.isContainerID(String(id)) else {
            throw PreviewURLError(.invalidContainerID, "'\(PreviewURL.shown(id))' is not a container id (GTM-XXXX)")
        }
        self.appID = appID
        self.containerID = String(id)

        if parameters.count == 2, parameters[1].name == "gtm_preview", parameters[1].value == "" {
            action = .exit
            return
        }
        guard parameters.count >= 2, parameters[1].name == "gtm_auth", let token = parameters[1].value else {
            let name = parameters.count >= 2 ? PreviewURL.shown(parameters[1].name) : ""
            throw PreviewURLError(
                .malformed,
                "the second parameter must be 'gtm_auth' (or an empty 'gtm_preview' to exit), not '\(name)'"
            )
        }
        guard !token.isEmpty, token.count <= 512, token.allSatisfy(PreviewURL.isTokenCharacter) else {
            throw PreviewURLError(
                .malformed,
                "the 'gtm_auth' token must be 1 to 512 letters, digits, '-', '_', '.' or '~'"
            )
        }
        guard parameters.count >= 3, parameters[2].name == "gtm_preview", let number = parameters[2].value else {
            let name = parameters.count >= 3 ? PreviewURL.shown(parameters[2].name) : ""
            throw PreviewURLError(.malformed, "the third parameter must be 'gtm_preview', not '\(name)'")
        }
        guard (1...20).contains(number.count), number.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw PreviewURLError(.malformed, "'gtm_preview' must be digits, not '\(PreviewURL.shown(number))'")
        }
        var debug = false
        if parameters.count >= 4 {
            guard parameters[3].name == "gtm_debug", parameters[3].value == "x" else {
                let name = parameters[3].name
                let item = name == "gtm_debug" ? name + (parameters[3].value.map { "=" + $0 } ?? "") : name
                throw PreviewURLError(
                    .malformed,
                    "only 'gtm_debug=x' may follow 'gtm_preview', not '\(PreviewURL.shown(item))'"
                )
            }
            debug = true
        }
        guard parameters.count <= 4 else {
            throw PreviewURLError(.malformed, "nothing may follow 'gtm_debug=x'")
        }
        action = .enter(
            PreviewRequest(
                containerID: containerID,
                authToken: String(token),
                previewNumber: String(number),
                debug: debug
            )
        )
    }

    private static func isAppIDCharacter(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "." || c == "-" || c == "_" || c == "+")
    }

    private static func isTokenCharacter(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "-" || c == "_" || c == "." || c == "~")
    }

    /// A part of the URL as messages show it: at most 40 characters.
    private static func shown(_ part: some StringProtocol) -> String {
        part.count <= 40 ? String(part) : part.prefix(40) + "…"
    }
}
