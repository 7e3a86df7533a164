/// A user id as a dictionary or set key that compares **bytes**, not Unicode canonical equivalence (what
/// `String`'s `==` and hash do: `"caf\u{E9}" == "cafe\u{301}"`), ordered by its UTF-8 bytes.
///
/// External ids are bytes everywhere in ContainerKit, and in PostgreSQL (`text` equality under a deterministic
/// collation is byte equality): a group commit that folded two such users into one entry would write one user's
/// snapshot into the other's row.
struct UserIDKey: Hashable, Comparable, Sendable {
    /// The user id as given.
    let userID: String

    init(_ userID: String) { self.userID = userID }

    static func == (lhs: UserIDKey, rhs: UserIDKey) -> Bool {
        lhs.userID.utf8.elementsEqual(rhs.userID.utf8)
    }

    static func < (lhs: UserIDKey, rhs: UserIDKey) -> Bool {
        lhs.userID.utf8.lexicographicallyPrecedes(rhs.userID.utf8)
    }

    func hash(into hasher: inout Hasher) {
        var id = userID
        id.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
