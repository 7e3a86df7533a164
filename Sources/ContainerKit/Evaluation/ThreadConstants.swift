#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// This thread's own copies of what every call of a planned tag carries: the argument keys (which the call's
/// argument map shares) and the call's ``FunctionCall/Origin``.
///
/// A call retains both and releases them when its record goes. Taken from the ``CallPlan`` that every
/// session shares, those were reference-count writes to cache lines every pushing core writes: two threads
/// pushing into two sessions of one runtime then kept moving the lines between their cores, which cost a
/// quarter of the two-thread rate whenever the host placed the two vCPUs far apart. A thread's copies are
/// written by that thread alone (and by another only where a result it made is dropped there).
///
/// The tables live in thread-local storage and are only ever touched by their thread (so they need no lock):
/// one per container, by ``Container/Storage/serial`` (a number no other container of the process has, so a
/// container loaded where a dropped one lived cannot read the other's entries), for at most ``capacity``
/// containers; a thread calling more drops the oldest table it made. The strings are copies too, so that
/// reading a key or a class path writes nothing another thread reads. A thread's copies take a few hundred
/// bytes per container it called tags of, and are freed when the thread exits (or later, with the last
/// result that holds them).
final class ThreadCallConstants {
    /// What a planned call carries, in this thread's own copies.
    struct Constants {
        let keys: [String]
        let origin: FunctionCall.Origin
    }

    /// One container's constants, by tag index (`nil` until a tag is called on this thread). An evaluation
    /// holds its container's table while it runs (see ``table(serial:tags:)``). Kept in a buffer of its own:
    /// a stored array would be checked for exclusive access at every call.
    final class Table {
        let serial: UInt64
        private let constants: UnsafeMutableBufferPointer<Constants?>

        init(serial: UInt64, tags: Int) {
            self.serial = serial
            constants = .allocate(capacity: tags)
            constants.initialize(repeating: nil)
        }

        deinit {
            _ = constants.deinitialize()
            constants.deallocate()
        }

        /// Where the constants of `plan`, the plan of tag `tag`, are (made on the first call): valid while this
        /// table lives. The caller reads them in place, so that each is retained once, by what keeps it.
        func constants(of plan: CallPlan, tag: Int) -> UnsafePointer<Constants?> {
            let slot = constants.baseAddress! + tag
            if slot.pointee != nil { return UnsafePointer(slot) }
            slot.pointee = Constants(
                keys: plan.keys.map(ThreadCallConstants.ownCopy),
                origin: FunctionCall.Origin(
                    name: ThreadCallConstants.ownCopy(plan.origin.name),
                    containerID: ThreadCallConstants.ownCopy(plan.origin.containerID),
                    tagID: plan.origin.tagID,
                    displayName: plan.origin.displayName.map(ThreadCallConstants.ownCopy)
                )
            )
            return UnsafePointer(slot)
        }
    }

    /// The containers whose constants a thread keeps.
    static let capacity = 8

    /// The tables, retained (`nil` where none is yet), in a buffer of their own (see ``Table``).
    private let tables: UnsafeMutableBufferPointer<Unmanaged<Table>?>
    /// Where the next table made goes (the oldest one made).
    private var next = 0

    private init() {
        tables = .allocate(capacity: ThreadCallConstants.capacity)
        tables.initialize(repeating: nil)
    }

    deinit {
        for table in tables { table?.release() }
        tables.deallocate()
    }

    /// The calling thread's tables (made on the thread's first planned call; freed when the thread exits),
    /// unretained: the thread-local storage keeps them, and only this thread reads it.
    static var current: Unmanaged<ThreadCallConstants> {
        if let existing = pthread_getspecific(key) { return Unmanaged.fromOpaque(existing) }
        let made = Unmanaged.passRetained(ThreadCallConstants())
        pthread_setspecific(key, made.toOpaque())
        return made
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { tables in
            guard let tables else { return }
            Unmanaged<ThreadCallConstants>.fromOpaque(tables).release()
        }
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// This thread's table for the storage numbered `serial` (``Container/Storage/serial``), which has `tags`
    /// tags: found, or made in place of the oldest one made. Unretained: it lives until this thread makes
    /// ``capacity`` more tables, so a caller that uses it longer retains it.
    func table(serial: UInt64, tags: Int) -> Unmanaged<Table> {
        for slot in tables {
            guard let slot else { break }
            if slot._withUnsafeGuaranteedRef({ $0.serial == serial }) { return slot }
        }
        let made = Unmanaged.passRetained(Table(serial: serial, tags: tags))
        tables[next]?.release()
        tables[next] = made
        next = (next + 1) % ThreadCallConstants.capacity
        return made
    }

    /// `string` in storage of its own (a string of more than 15 UTF-8 bytes is a reference to a buffer).
    static func ownCopy(_ string: String) -> String {
        String(decoding: Array(string.utf8), as: UTF8.self)
    }
}
