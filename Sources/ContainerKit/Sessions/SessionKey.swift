/// A user ID as a dictionary key that compares **bytes**, not Unicode canonical equivalence.
///
/// `String`'s `==` and hash treat `"caf\u{E9}"` and `"cafe\u{301}"` as one string; as Braze `external_id`s,
/// PostgreSQL keys and file names they are two users. ``SessionStore`` and the session persistences key by
/// this type, so that each byte string is its own session.
package struct SessionKey: Hashable, Sendable {
    /// The user ID as given.
    package let userID: String

    package init(_ userID: String) { self.userID = userID }

    package static func == (lhs: SessionKey, rhs: SessionKey) -> Bool {
        // One `memcmp` (every look-up of a session compares the key it finds), not a walk of two UTF-8 views.
        lhs.userID.hasSameBytes(as: rhs.userID)
    }

    package func hash(into hasher: inout Hasher) {
        var id = userID
        id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
