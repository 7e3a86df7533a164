import Foundation
import HTTPTypes
import Hummingbird

/// The keys a source must present to push events, as Segment's and RudderStack's HTTP APIs take a source's
/// write key: `Authorization: Basic base64("<key>:")` (the key as the user name, an empty password) or
/// `Authorization: Bearer <key>`. Several keys are accepted at once, so a key can be rotated: add the new one,
/// move the clients, remove the old one.
///
/// A presented key is compared with every configured key, each in time that does not depend on where the bytes
/// differ, and with all of them whichever matches: the answer's timing says nothing about a key.
struct WriteKeys: Sendable {
    private let keys: [[UInt8]]

    /// - Parameter keys: the accepted keys (``isUsableKey(_:)``).
    init(_ keys: [String]) {
        self.keys = keys.map { Array($0.utf8) }
    }

    /// Whether no key is configured (anyone who reaches the port may push).
    var isEmpty: Bool { keys.isEmpty }

    /// Whether `request` presents one of the keys, in one `Authorization` header.
    func accepts(_ request: Request) -> Bool {
        let values = request.headers[values: .authorization]
        guard values.count == 1, let presented = Self.presentedKey(values[0]) else { return false }
        var matched: UInt8 = 0
        for key in keys { matched |= Self.constantTimeEquals(presented, key) ? 1 : 0 }
        return matched == 1
    }

    /// The key an `Authorization` value presents: a `Bearer` token, or the user name of `Basic` credentials
    /// whose password is empty (`<key>:`). Schemes are case-insensitive.
    static func presentedKey(_ authorization: String) -> [UInt8]? {
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2 else { return nil }
        let credentials = parts[1].trimmingCharacters(in: .whitespaces)
        switch parts[0].lowercased() {
        case "bearer":
            return credentials.isEmpty ? nil : Array(credentials.utf8)
        case "basic":
            guard let decoded = Data(base64Encoded: credentials) else { return nil }
            let bytes = [UInt8](decoded)
            // The user name ends at the first ':'; the password after it must be empty.
            guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, colon == bytes.count - 1 else {
                return nil
            }
            return Array(bytes[..<colon])
        default:
            return nil
        }
    }

    /// Whether `presented` is `key`, in a time that depends on `key`'s length only (not on where they differ,
    /// nor on how long `presented` is).
    static func constantTimeEquals(_ presented: [UInt8], _ key: [UInt8]) -> Bool {
        var difference: UInt8 = presented.count == key.count ? 0 : 1
        presented.withUnsafeBufferPointer { presented in
            for index in key.indices {
                let byte = index < presented.count ? presented[index] : 0
                difference |= byte ^ key[index]
            }
        }
        return difference == 0
    }

    /// Whether `key` can be a write key (or the metrics token): at least 16 characters, printable ASCII without
    /// spaces, `:` (it ends a Basic user name) or `,` (it separates the keys of `TAGSERVICE_WRITE_KEYS`).
    static func isUsableKey(_ key: String) -> Bool {
        key.utf8.count >= 16
            && key.utf8.allSatisfy { (0x21...0x7E).contains($0) && $0 != UInt8(ascii: ":") && $0 != UInt8(ascii: ",") }
    }

    /// The `401` answer: `{"error": {"code": "unauthorized", …}}`, with one `WWW-Authenticate` challenge per
    /// accepted scheme. It never says which keys exist, nor repeats the one presented.
    static func unauthorized(
        _ message: String = "this endpoint needs a write key: 'Authorization: Basic <base64 of key:>' or "
            + "'Authorization: Bearer <key>'",
        realm: String,
        schemes: [String] = ["Basic", "Bearer"]
    ) -> Response {
        var response = APIError(.unauthorized, message).response
        for scheme in schemes {
            let charset = scheme == "Basic" ? #", charset="UTF-8""# : ""
            response.headers.append(
                HTTPField(name: .wwwAuthenticate, value: #"\#(scheme) realm="\#(realm)"\#(charset)"#)
            )
        }
        return response
    }
}

/// Refuses a request without one of the write keys with `401 unauthorized` before its handler runs (nothing
/// is read, nothing pushed). The service adds it to the route group of the endpoints that push events; `/health`,
/// `/ready` and `/metrics` are outside it (`/metrics` has its own ``MetricsTokenMiddleware``).
struct WriteKeyMiddleware<Context: RequestContext>: RouterMiddleware {
    let keys: WriteKeys

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        guard keys.accepts(request) else { return WriteKeys.unauthorized(realm: "TagService") }
        return try await next(request, context)
    }
}

/// `--metrics-token`: `GET /metrics` answers only `Authorization: Bearer <token>` (what Prometheus's
/// `authorization` scrape setting sends); without the token, `401 unauthorized`.
struct MetricsTokenMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: WriteKeys

    func handle(
        _ request: Request,
        context: Context,
        next: (Request, Context) async throws -> Response
    ) async throws -> Response {
        let values = request.headers[values: .authorization]
        guard values.count == 1, values[0].lowercased().hasPrefix("bearer "), token.accepts(request) else {
            return WriteKeys.unauthorized(
                "/metrics needs 'Authorization: Bearer <metrics token>'",
                realm: "metrics",
                schemes: ["Bearer"]
            )
        }
        return try await next(request, context)
    }
}
