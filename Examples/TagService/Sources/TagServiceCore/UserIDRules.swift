/// What a user id must be, wherever it comes from (the body's `user_id`, the `X-User-ID` header, the path): 1 to
/// 997 bytes of UTF-8 (Braze's limit for an `external_id`), without NUL (it cannot travel everywhere an id goes:
/// C strings, PostgreSQL `text`) and without U+FFFD — the character HTTP parsing puts in place of bytes that are
/// not UTF-8, so an id that holds it is not the one the client sent. Ids are compared as bytes, never by
/// Unicode canonical equivalence: `"caf\u{E9}"` and `"cafe\u{301}"` are two users.
enum UserIDRules {
    /// The longest user id, in UTF-8 bytes.
    static let maximumBytes = 997

    /// Why `userID` is refused (a phrase that follows its name: "is empty"), or `nil` when it is fine.
    static func problem(with userID: String) -> String? {
        let bytes = userID.utf8
        if bytes.isEmpty { return "is empty" }
        if bytes.count > maximumBytes { return "is longer than \(maximumBytes) bytes" }
        if bytes.contains(0) { return "contains a NUL character" }
        if userID.unicodeScalars.contains("\u{FFFD}") {
            return "contains U+FFFD, the replacement for bytes that are not UTF-8"
        }
        return nil
    }
}
