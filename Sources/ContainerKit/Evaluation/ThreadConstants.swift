#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// This thread's own copies of the constants of a container that an evaluation hands on or reads: what every
/// call of a planned tag carries (the argument keys, which the call's argument map shares, the call's
/// ``FunctionCall/Origin``, and the literal argument values), the constant text of each predicate, and the key
/// and nested path each variable macro reads (an event parameter's, a data-layer variable's name).
///
/// Copying a string longer than 15 bytes retains its buffer, and a call keeps its keys, origin and literals
/// until its record goes. Taken from the program every session shares, those were reference-count writes to
/// cache lines every pushing core writes: two threads pushing into two sessions of one runtime then kept
/// moving the lines between their cores, which cost a tenth to a quarter of the two-thread rate whenever the
/// host placed the two vCPUs far apart. A thread's copies are written by that thread alone (and by another
/// only where a result it made is dropped there).
///
/// The tables live in thread-local storage and are only ever touched by their thread (so they need no lock):
/// one per container, by ``Container/Storage/serial`` (a number no other container of the process has, so a
/// container loaded where a dropped one lived cannot read the other's entries), for at most ``capacity``
/// containers; a thread evaluating more drops the oldest table it made. The strings are copies too, so that
/// reading a key or a class path writes nothing another thread reads. A thread's copies take a few hundred
/// bytes to a few kilobytes per container it evaluated, and are freed when the thread exits (or later, with
/// the last result that holds them).
final class ThreadConstants {
    /// What a planned call carries, in this thread's own copies.
    struct Constants {
        let keys: [String]
        let origin: FunctionCall.Origin
        /// Per slot of the plan, its literal value (`.undefined` for a slot that is not a literal).
        let literals: [Value]
    }

    /// One container's constants: per tag (`nil` until a tag is called on this thread), per predicate and per
    /// macro. An evaluation holds its container's table while it runs (see ``table(serial:)``). Kept in
    /// buffers of their own: a stored array would be checked for exclusive access at every call.
    final class Table {
        let serial: UInt64
        private let constants: UnsafeMutableBufferPointer<Constants?>
        /// Per predicate, its ``PredicateDef/constantText``.
        private let texts: UnsafeMutableBufferPointer<String?>
        /// Per macro, the key a variable macro reads (`nil` for other macros).
        private let keys: UnsafeMutableBufferPointer<String?>
        /// Per macro, the nested path a variable macro reads (empty for a key without a dot, and for other
        /// macros).
        private let paths: UnsafeMutableBufferPointer<[String]>
        /// Per macro, how it reads its key when it is a variable.
        private let reads: UnsafeMutableBufferPointer<VariableRead>

        /// Copies what `storage`'s predicates and macros hold (the calls' constants are copied on their first
        /// call).
        init(storage: Container.Storage) {
            serial = storage.serial
            constants = .allocate(capacity: storage.callPlans.count)
            constants.initialize(repeating: nil)
            let program = storage.program
            texts = .allocate(capacity: program.predicates.count)
            _ = texts.initialize(from: program.predicates.lazy.map { $0.constantText?.ownCopy() })
            keys = .allocate(capacity: program.macros.count)
            _ = keys.initialize(
                from: program.macros.lazy.map { macro -> String? in
                    switch macro.kind {
                    case .eventParameter(let key, _, _, _): return key.ownCopy()
                    case .dataLayer(let name, _, _): return name.ownCopy()
                    default: return nil
                    }
                }
            )
            paths = .allocate(capacity: program.macros.count)
            _ = paths.initialize(
                from: program.macros.lazy.map { macro -> [String] in
                    switch macro.kind {
                    case .eventParameter(_, let path, _, _), .dataLayer(_, let path, _):
                        return path.map { $0.ownCopy() }
                    default: return []
                    }
                }
            )
            reads = .allocate(capacity: program.macros.count)
            _ = reads.initialize(from: program.macros.lazy.map { VariableRead($0.kind) })
        }

        deinit {
            _ = constants.deinitialize()
            constants.deallocate()
            _ = texts.deinitialize()
            texts.deallocate()
            _ = keys.deinitialize()
            keys.deallocate()
            _ = paths.deinitialize()
            paths.deallocate()
            reads.deallocate()
        }

        /// Where the constants of `plan`, the plan of tag `tag`, are (made on the first call): valid while this
        /// table lives. The caller reads them in place, so that each is retained once, by what keeps it.
        func constants(of plan: CallPlan, tag: Int) -> UnsafePointer<Constants?> {
            let slot = constants.baseAddress! + tag
            if slot.pointee != nil { return UnsafePointer(slot) }
            slot.pointee = Constants(
                keys: plan.keys.map { $0.ownCopy() },
                origin: FunctionCall.Origin(
                    name: plan.origin.name.ownCopy(),
                    containerID: plan.origin.containerID.ownCopy(),
                    tagID: plan.origin.tagID,
                    displayName: plan.origin.displayName?.ownCopy()
                ),
                literals: plan.slots.map { slot in
                    if case .literal(let value) = slot { return value.ownCopy() }
                    return .undefined
                }
            )
            return UnsafePointer(slot)
        }

        /// This thread's copy of predicate `p`'s constant text.
        func text(ofPredicate p: Int) -> String? { texts[p] }

        /// How macro `m` reads its key (``VariableRead/other`` for any macro but a variable).
        func read(ofMacro m: Int) -> VariableRead { reads[m] }

        /// This thread's copy of the key variable macro `m` reads (an event parameter's, a data-layer
        /// variable's name); empty for a macro of another kind.
        func key(ofMacro m: Int) -> String { keys[m] ?? "" }

        /// This thread's copy of the nested path variable macro `m` reads (empty for a key without a dot, and
        /// for a macro of another kind).
        func path(ofMacro m: Int) -> [String] { paths[m] }
    }

    /// How a variable macro reads its key: what the evaluation needs to know of its definition without copying
    /// it (binding the definition's payload retained its key, its path and its default value, which every
    /// session's evaluations share).
    enum VariableRead: Equatable {
        /// Any other macro: the evaluation reads its definition.
        case other
        /// An event parameter; `nested` when its key has a dot (a missing key is then looked up along its path).
        case eventParameter(checksEcommerce: Bool, hasDefault: Bool, nested: Bool)
        /// A data-layer variable (version 2) read from the merged model; `nested` when its name has a dot (it is
        /// then read along its path).
        case dataLayer(hasDefault: Bool, nested: Bool)

        init(_ kind: MacroKind) {
            switch kind {
            case .eventParameter(_, let path, let defaultValue, let checksEcommerce):
                self = .eventParameter(
                    checksEcommerce: checksEcommerce,
                    hasDefault: defaultValue != nil,
                    nested: !path.isEmpty
                )
            case .dataLayer(_, let path, let defaultValue):
                self = .dataLayer(hasDefault: defaultValue != nil, nested: !path.isEmpty)
            default:
                self = .other
            }
        }
    }

    /// The containers whose constants a thread keeps.
    static let capacity = 8

    /// The tables, retained (`nil` where none is yet), in a buffer of their own (see ``Table``).
    private let tables: UnsafeMutableBufferPointer<Unmanaged<Table>?>
    /// Where the next table made goes (the oldest one made).
    private var next = 0

    private init() {
        tables = .allocate(capacity: ThreadConstants.capacity)
        tables.initialize(repeating: nil)
    }

    deinit {
        for table in tables { table?.release() }
        tables.deallocate()
    }

    /// The calling thread's tables (made on the thread's first planned call; freed when the thread exits),
    /// unretained: the thread-local storage keeps them, and only this thread reads it.
    static var current: Unmanaged<ThreadConstants> {
        if let existing = pthread_getspecific(key) { return Unmanaged.fromOpaque(existing) }
        let made = Unmanaged.passRetained(ThreadConstants())
        pthread_setspecific(key, made.toOpaque())
        return made
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let status = pthread_key_create(&key) { tables in
            guard let tables else { return }
            Unmanaged<ThreadConstants>.fromOpaque(tables).release()
        }
        precondition(status == 0, "pthread_key_create failed: \(status)")
        return key
    }()

    /// This thread's table for the storage numbered `serial` (``Container/Storage/serial``), if it has one.
    /// Unretained: it lives until this thread makes ``capacity`` more tables, so a caller that uses it longer
    /// retains it.
    func table(serial: UInt64) -> Unmanaged<Table>? {
        for slot in tables {
            guard let slot else { break }
            if slot._withUnsafeGuaranteedRef({ $0.serial == serial }) { return slot }
        }
        return nil
    }

    /// Makes this thread's table for `storage`, in place of the oldest one made (unretained, like
    /// ``table(serial:)``'s).
    func makeTable(for storage: Container.Storage) -> Unmanaged<Table> {
        let made = Unmanaged.passRetained(Table(storage: storage))
        tables[next]?.release()
        tables[next] = made
        next = (next + 1) % ThreadConstants.capacity
        return made
    }
}
