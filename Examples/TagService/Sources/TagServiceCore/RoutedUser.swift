import HTTPTypes
import Hummingbird

/// The user a request names outside its body, for a load balancer to route on (nginx cannot read a JSON body):
/// the `X-User-ID` header, or the path of `POST /v1/users/<user_id>/events` and `…/batch`. The same rules in
/// every mode:
///
/// - The path segment is **percent-decoded** (`caf%C3%A9` and `caf%c3%a9` are the user `café`, as nginx's
///   decoded `$uri` hashes them); the decoded bytes must be UTF-8.
/// - The header is taken as it came, once: a repeated `X-User-ID` is refused, not joined into `dave, erin`.
/// - A header and a path that both name a user must name the same one (compared as bytes).
/// - Either id follows ``UserIDRules``; a body's `user_id` must then be the same user (``EventRequest``).
///
/// Refusals are 400 `invalid_user_id` (unusable) and `conflicting_user_id` (header and path differ).
enum RoutedUser {
    /// The header a load balancer routes on.
    static let header = HTTPField.Name("X-User-ID")!

    /// The user `request` is routed to (`pathSegment`: the `:user_id` parameter of its route, as it came), or
    /// `nil` when it names none.
    static func of(_ request: Request, pathSegment: String?) throws(APIError) -> String? {
        let values = request.headers[values: header]
        guard values.count <= 1 else {
            throw APIError(.invalidUserID, "the 'X-User-ID' header is repeated; send it once")
        }
        var fromHeader: String?
        if let value = values.first, !value.isEmpty {
            if let problem = UserIDRules.problem(with: value) {
                throw APIError(.invalidUserID, "the 'X-User-ID' header \(problem)")
            }
            fromHeader = value
        }
        guard let pathSegment else { return fromHeader }
        let fromPath = try decodedPathSegment(pathSegment)
        if let fromHeader, !fromHeader.utf8.elementsEqual(fromPath.utf8) {
            throw APIError(
                .conflictingUserID,
                "the 'X-User-ID' header '\(fromHeader)' and the path's user '\(fromPath)' are two users"
            )
        }
        return fromPath
    }

    /// The user id of a path segment, percent-decoded: `%XX` is the byte `XX` (either case), every other byte
    /// stands for itself (`+` too: this is a path, not a form). Refused with `invalid_user_id`: a `%` not
    /// followed by two hexadecimal digits, bytes that are not UTF-8, and what ``UserIDRules`` refuses.
    static func decodedPathSegment(_ segment: String) throws(APIError) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(segment.utf8.count)
        var iterator = segment.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw APIError(.invalidUserID, "the path's user '\(segment)' has a '%' without two hex digits")
            }
            bytes.append(high << 4 | low)
        }
        guard let userID = String(validating: bytes, as: UTF8.self) else {
            throw APIError(.invalidUserID, "the path's user '\(segment)' is not UTF-8 once percent-decoded")
        }
        if let problem = UserIDRules.problem(with: userID) {
            throw APIError(.invalidUserID, "the path's user '\(segment)' \(problem)")
        }
        return userID
    }

    private static func hexValue(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
