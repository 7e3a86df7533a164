/// How ``TagManager/open(id:openType:timeout:callback:)`` decides that it has waited long enough.
///
/// Both types return at the timeout at the latest, with the best container loaded by then (a stale saved
/// container, else the bundled default container, else none); loading goes on in the background and a
/// better container replaces the one returned as soon as it arrives.
public enum OpenType: String, Sendable, Hashable, CaseIterable {
    /// Return as soon as a saved container loads, whatever its age; when there is none, when the network
    /// load succeeds or fails.
    case preferNonDefault = "prefer_non_default"
    /// Return as soon as a *fresh* saved container (fetched less than the refresh period ago) loads;
    /// otherwise when the network load succeeds or fails.
    case preferFresh = "prefer_fresh"
}
