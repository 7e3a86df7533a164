/// What a push with an event ID fired, as the packed words its ``SeenEventIDs`` entry keeps (``FiredWriter``'s:
/// one word a tag with a plain status and no records), written from the push's calls as its evaluation ends,
/// while they are still the evaluation's own array: remembering the push then copies a few words under the
/// session's lock instead of walking the calls through the push's result.
///
/// Holds up to ``capacity`` words; a push that fired more, or a tag that does not pack (a message, records,
/// durability), leaves it ``isComplete`` false, and its entry is written from the result as before
/// (``SeenEventIDs/finish(_:_:withFired:)``). So do a turn's nested pushes and push hooks, which the turn's
/// caller checks.
struct FiredSummary {
    /// The most words a summary holds: a push fires one or two tags in most containers.
    static let capacity = 4

    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
    /// How many words are written; -1 once a tag did not pack or did not fit.
    private(set) var count = 0

    /// Whether every tag the push fired is in the summary.
    var isComplete: Bool { count >= 0 }

    /// Adds the packed word of each of `calls` (in firing order), the tags of `containers` (the snapshot the
    /// calls' container indices refer to); stops at the first that does not pack.
    mutating func add(_ calls: borrowing [FiredCall], containers: borrowing [Container]) {
        guard count >= 0, !calls.isEmpty else { return }
        calls.withUnsafeBufferPointer { calls in
            for index in calls.indices {
                let tagID = containers[calls[index].container].storage.program.tags[calls[index].tag].tagID
                guard count < Self.capacity, let word = FiredWriter.plainWord(of: calls[index], tagID: tagID) else {
                    count = -1
                    return
                }
                switch count {
                case 0: words.0 = word
                case 1: words.1 = word
                case 2: words.2 = word
                default: words.3 = word
                }
                count &+= 1
            }
        }
    }

    /// Stores the ``capacity`` words (those past ``count`` too: the caller has room for them) into `ring` from word
    /// `start` on, wrapping with `mask`.
    @inline(__always)
    func store(into ring: UnsafeMutablePointer<UInt64>, at start: Int, mask: Int) {
        ring[start & mask] = words.0
        ring[(start &+ 1) & mask] = words.1
        ring[(start &+ 2) & mask] = words.2
        ring[(start &+ 3) & mask] = words.3
    }

    /// Word `index` (below ``count``).
    @inline(__always)
    func word(_ index: Int) -> UInt64 {
        switch index {
        case 0: words.0
        case 1: words.1
        case 2: words.2
        default: words.3
        }
    }
}

/// The event ID a turn's push carried, once remembered: its sequence number in the session's ``SeenEventIDs``
/// (-1: none), and what the push fired, summarised as its evaluation ended.
struct RememberedEventID {
    var sequence = -1
    var fired = FiredSummary()
}
