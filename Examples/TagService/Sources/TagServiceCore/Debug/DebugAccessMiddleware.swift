import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore

/// Every debug route is behind the token (`--debug-token`); without it, each answers `404 Not Found`, as a route
/// that does not exist would: nothing tells a scanner the page is there.
///
/// - A browser presents the token once, as `?token=<token>` on any debug address: the answer is `303 See Other`
///   to the same address without it, with a cookie (`HttpOnly`, `SameSite=Strict`, `Path=/debug`) that its
///   next requests carry; the token leaves the address bar and the history.
/// - A script sends `Authorization: Bearer <token>`.
///
/// The token is compared in time that does not depend on where it differs (``WriteKeys/constantTimeEquals(_:_:)``).
/// Every answer carries a strict Content-Security-Policy (scripts, styles and connections from the debug
/// listener's own origin only; no inline script, style or handler; no frame, no form posted elsewhere), and
/// `nosniff`, `no-referrer`, `no-store`.
struct DebugAccessMiddleware: RouterMiddleware {
    typealias Context = BasicRequestContext
    let hub: DebugHub

    /// The cookie's name.
    static let cookieName = "tagservice_debug"

    /// The page's Content-Security-Policy.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        var response: Response
        if let presented = request.uri.queryParameters["token"] {
            guard hub.accepts(presented.utf8) else { return Self.notFound }
            response = Response(
                status: .seeOther,
                headers: [
                    .location: Self.addressWithoutToken(request.uri),
                    .setCookie:
                        "\(Self.cookieName)=\(Self.hex(presented.utf8)); Path=/debug; HttpOnly; SameSite=Strict",
                ]
            )
        } else if isAuthorized(request) {
            response = try await next(request, context)
        } else {
            return Self.notFound
        }
        response.headers[.contentSecurityPolicy] = Self.contentSecurityPolicy
        response.headers[.xContentTypeOptions] = "nosniff"
        response.headers[.referrerPolicy] = "no-referrer"
        response.headers[.xFrameOptions] = "DENY"
        if response.headers[.cacheControl] == nil { response.headers[.cacheControl] = "no-store" }
        return response
    }

    /// Whether `request` carries the token: `Authorization: Bearer <token>`, or the cookie.
    func isAuthorized(_ request: Request) -> Bool {
        let authorizations = request.headers[values: .authorization]
        if authorizations.count == 1, authorizations[0].lowercased().hasPrefix("bearer "),
            let presented = WriteKeys.presentedKey(authorizations[0])
        {
            return hub.accepts(presented)
        }
        for header in request.headers[values: .cookie] {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == Self.cookieName,
                    let bytes = Self.unhex(parts[1].trimmingCharacters(in: .whitespaces))
                else { continue }
                if hub.accepts(bytes) { return true }
            }
        }
        return false
    }

    /// The request's address without `token=…` in its query; one leading slash (never `//host`: no redirect
    /// leaves the listener).
    static func addressWithoutToken(_ uri: URI) -> String {
        var path = uri.path
        while path.hasPrefix("//") { path.removeFirst() }
        if !path.hasPrefix("/") { path = "/" + path }
        let kept = (uri.query ?? "").split(separator: "&").filter { !$0.hasPrefix("token=") && $0 != "token" }
        return kept.isEmpty ? path : path + "?" + kept.joined(separator: "&")
    }

    static var notFound: Response { Response(status: .notFound) }

    static func hex(_ bytes: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func unhex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0, digits.count <= 512 else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < digits.count {
            guard let high = nibble(digits[index]), let low = nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}

extension HTTPField.Name {
    static let referrerPolicy = HTTPField.Name("Referrer-Policy")!
    static let xFrameOptions = HTTPField.Name("X-Frame-Options")!
}
