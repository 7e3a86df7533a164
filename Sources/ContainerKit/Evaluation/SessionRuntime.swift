#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One session's hold on a runtime ``TagManager/Snapshot``, and the one place where the evaluation's
/// reference-count devices live: an ``Evaluation`` reaches what every session shares (the snapshot, the
/// containers' storage and call plans, the resolved handlers, the constants a call carries) only through the
/// accessors here, which borrow instead of retaining and hand out this thread's own copies of shared strings.
///
/// Why they exist: a push that retains an object every session shares writes its reference count, an atomic
/// write to a cache line that every core pushing into another session writes too. Two threads pushing into
/// two sessions of one runtime then keep moving those lines between their cores. The devices:
/// - each session has its own holder of the snapshot (this object) and of each container (``ContainerHold``),
///   which a push retains instead of the shared objects;
/// - the snapshot, the call plans and the resolved handlers are borrowed (``withSnapshot(_:)``,
///   ``callPlan(ofTag:in:)``, ``BorrowedHandlers/withHandler(ofTag:_:)``), valid while this holder and
///   the holder of the container live;
/// - the constants a call hands on or an evaluation reads (argument keys, origin, literals, condition texts,
///   variable keys and paths) are read from this thread's copies (``Constants``, ``ThreadTables``).
///
/// What they save is pinned by `make bench-check` (instructions per evaluated event) and by `make bench`'s
/// `two_thread_scaling`; `Docs/Performance.md` says how to measure a change to them.
final class SessionRuntime: Sendable {
    let generation: UInt64
    let snapshot: TagManager.Snapshot
    /// The session's client context, as its pushes evaluate it (what the built-in variables report): carried by the
    /// holder a push retains anyway, so a push retains no context box of its own (most sessions share the runtime's
    /// default one). A session whose context changed gets a new holder (``with(context:)``) at its next push; a push
    /// in flight keeps the one it started with.
    let context: ClientContext.Box
    /// ``snapshot`` without a reference count, for a push to borrow while this holder lives.
    private let borrowedSnapshot: Unmanaged<TagManager.Snapshot>
    /// This session's reference to each container of ``snapshot``, in its order: what an evaluation retains.
    let containers: [ContainerHold]

    /// A session's holder of `snapshot`, with its own reference to each container (`containers`: none, for a
    /// holder that evaluates no container of the snapshot), for a session whose client context is `context`.
    init(
        generation: UInt64,
        snapshot: TagManager.Snapshot,
        containers: [ContainerHold]? = nil,
        context: ClientContext.Box
    ) {
        self.generation = generation
        self.snapshot = snapshot
        self.context = context
        self.borrowedSnapshot = Unmanaged.passUnretained(snapshot)
        self.containers = containers ?? snapshot.containers.map { ContainerHold($0.storage) }
    }

    /// This holder for a session whose context is now `context` (the same snapshot and container holds).
    func with(context: ClientContext.Box) -> SessionRuntime {
        SessionRuntime(generation: generation, snapshot: snapshot, containers: containers, context: context)
    }

    /// Calls `body` with ``snapshot``, borrowed (not retained): loading the strong reference to pass it on
    /// retained the snapshot every session shares.
    @inline(__always)
    func withSnapshot<R>(_ body: (TagManager.Snapshot) throws -> R) rethrows -> R {
        try borrowedSnapshot._withUnsafeGuaranteedRef(body)
    }

    /// One session's reference to a container: an evaluation retains this, not the container's storage, which
    /// every session's evaluations share.
    final class ContainerHold: Sendable {
        let storage: Container.Storage
        init(_ storage: Container.Storage) { self.storage = storage }
    }

    /// The call plan of tag `t` of `storage`, borrowed (valid while the caller holds `storage`); `nil` when the tag
    /// has no plan. A handle, not a closure run inside the use of `storage`: that kept `storage` retained around
    /// each call.
    @inline(__always)
    static func callPlan(ofTag t: Int, in storage: Container.Storage) -> BorrowedCallPlan? {
        storage.borrowedCallPlans[t].map(BorrowedCallPlan.init)
    }

    /// A borrowed ``CallPlan`` (see ``callPlan(ofTag:in:)``).
    struct BorrowedCallPlan {
        fileprivate let plan: Unmanaged<CallPlan>

        /// Calls `body` with the plan, without retaining it.
        @inline(__always)
        func with<R>(_ body: (CallPlan) -> R) -> R { plan._withUnsafeGuaranteedRef(body) }
    }

    /// One container's resolved handlers (see ``TagManager/Snapshot/borrowedTagHandlers(_:)``), without
    /// reference counts: valid while the snapshot that made them lives.
    ///
    /// `@unchecked`: the buffer is written once, by ``make(_:)``, and only read after that.
    struct BorrowedHandlers: @unchecked Sendable {
        private let buffer: UnsafeBufferPointer<Unmanaged<TagManager.ResolvedTagHandler>?>

        static let none = BorrowedHandlers(buffer: UnsafeBufferPointer(start: nil, count: 0))

        private init(buffer: UnsafeBufferPointer<Unmanaged<TagManager.ResolvedTagHandler>?>) {
            self.buffer = buffer
        }

        /// `handlers` without their reference counts, in a buffer that does not move (``deallocate()`` frees it;
        /// the caller keeps `handlers` alive as long).
        static func make(_ handlers: [TagManager.ResolvedTagHandler?]) -> BorrowedHandlers {
            let buffer = UnsafeMutableBufferPointer<Unmanaged<TagManager.ResolvedTagHandler>?>.allocate(
                capacity: handlers.count
            )
            _ = buffer.initialize(from: handlers.lazy.map { $0.map(Unmanaged.passUnretained) })
            return BorrowedHandlers(buffer: UnsafeBufferPointer(buffer))
        }

        func deallocate() { buffer.deallocate() }

        /// Calls `body` with the handler resolved for tag `t`, borrowed; `nil` when none was resolved.
        @inline(__always)
        func withHandler<R>(ofTag t: Int, _ body: (any FunctionCallTagHandler) -> R) -> R? {
            guard t < buffer.count, let handler = buffer[t] else { return nil }
            return handler._withUnsafeGuaranteedRef { body($0.handler) }
        }
    }
}

// MARK: Constants

extension SessionRuntime {
    /// An evaluation's hold on this thread's copies of the constants of the container it evaluates (see
    /// ``ThreadTables``): looked up when the evaluation starts a container (``start(_:)``), retained once, and read
    /// without retaining it again. The reads take no storage: passing the evaluation's storage to each retained it.
    struct Constants {
        private var table: ThreadTables.Table?
        /// ``table``, unretained (``table`` keeps it alive).
        private var reference: Unmanaged<ThreadTables.Table>?

        /// Takes this thread's table of `storage`'s constants (the evaluation starts that container).
        mutating func start(_ storage: Container.Storage) {
            let serial = storage.serial
            let found = ThreadTables.current._withUnsafeGuaranteedRef { tables in
                tables.table(serial: serial) ?? tables.makeTable(for: storage)
            }
            reference = found
            table = found.takeUnretainedValue()  // the evaluation's hold: the one retain
        }

        /// The table (``start(_:)`` took it).
        @inline(__always)
        private var current: Unmanaged<ThreadTables.Table> { reference! }

        /// This thread's copies of what the call of tag `t` (planned as `plan`) carries.
        func call(of plan: CallPlan, tag t: Int) -> CallConstants {
            CallConstants(slot: current._withUnsafeGuaranteedRef { $0.constants(of: plan, tag: t) })
        }

        /// This thread's copy of predicate `p`'s constant text.
        func text(ofPredicate p: Int) -> String? {
            current._withUnsafeGuaranteedRef { $0.text(ofPredicate: p) }
        }

        /// How macro `m` reads its key (``VariableRead/other`` for any macro but a variable).
        func read(ofMacro m: Int) -> VariableRead {
            current._withUnsafeGuaranteedRef { $0.read(ofMacro: m) }
        }

        /// This thread's copy of the key variable macro `m` reads; empty for a macro of another kind.
        func key(ofMacro m: Int) -> String {
            current._withUnsafeGuaranteedRef { $0.key(ofMacro: m) }
        }

        /// This thread's copy of the nested path variable macro `m` reads (empty for a key without a dot).
        func path(ofMacro m: Int) -> [String] {
            current._withUnsafeGuaranteedRef { $0.path(ofMacro: m) }
        }
    }

    /// What one planned call carries, read in place from this thread's table (valid while the evaluation's
    /// ``Constants`` holds that table, that is while it evaluates the container).
    struct CallConstants {
        fileprivate let slot: UnsafePointer<ThreadTables.CallConstants?>

        /// The call's argument keys (what its argument map shares when every value is defined).
        var keys: [String] { slot.pointee.unsafelyUnwrapped.keys }
        /// The call's origin.
        var origin: FunctionCall.Origin { slot.pointee.unsafelyUnwrapped.origin }
        /// The literal value of slot `i` of the plan.
        func literal(_ i: Int) -> Value { slot.pointee.unsafelyUnwrapped.literals[i] }
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
}

// MARK: This thread's copies

extension SessionRuntime {
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
    final class ThreadTables {
        /// What a planned call carries, in this thread's own copies.
        struct CallConstants {
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
            private let constants: UnsafeMutableBufferPointer<CallConstants?>
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
            @inline(__always)
            func constants(of plan: CallPlan, tag: Int) -> UnsafePointer<CallConstants?> {
                let slot = constants.baseAddress! + tag
                if case .none = slot.pointee { makeConstants(of: plan, in: slot) }
                return UnsafePointer(slot)
            }

            /// Copies what a call of `plan` carries into `slot` (the tag's first call on this thread).
            private func makeConstants(of plan: CallPlan, in slot: UnsafeMutablePointer<CallConstants?>) {
                slot.pointee = CallConstants(
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

        /// The containers whose constants a thread keeps.
        static let capacity = 8

        /// The tables, retained (`nil` where none is yet), in a buffer of their own (see ``Table``).
        private let tables: UnsafeMutableBufferPointer<Unmanaged<Table>?>
        /// Where the next table made goes (the oldest one made).
        private var next = 0

        /// The thread's evaluation buffers (see ``takeScratch()``).
        @exclusivity(unchecked) private var scratch = EvaluationScratch()

        private init() {
            tables = .allocate(capacity: ThreadTables.capacity)
            tables.initialize(repeating: nil)
        }

        /// Swaps `scratch` with the thread's evaluation buffers (see ``ScratchLease``).
        func swapScratch(_ scratch: inout EvaluationScratch) { swap(&self.scratch, &scratch) }

        deinit {
            for table in tables { table?.release() }
            tables.deallocate()
        }

        /// The calling thread's tables (made on the thread's first planned call; freed when the thread exits),
        /// unretained: the thread-local storage keeps them, and only this thread reads it.
        static var current: Unmanaged<ThreadTables> {
            if let existing = pthread_getspecific(key) { return Unmanaged.fromOpaque(existing) }
            let made = Unmanaged.passRetained(ThreadTables())
            pthread_setspecific(key, made.toOpaque())
            return made
        }

        private static let key: pthread_key_t = {
            var key = pthread_key_t()
            let status = pthread_key_create(&key) { tables in
                guard let tables else { return }
                Unmanaged<ThreadTables>.fromOpaque(tables).release()
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
            next = (next + 1) % ThreadTables.capacity
            return made
        }
    }
}

extension SessionRuntime {
    /// A turn's hold on its thread's evaluation buffers (``EvaluationScratch``: memo tables sized to the largest
    /// program the thread evaluated): the turn takes them for its evaluations and gives them back when it ends, on
    /// the same thread (a turn runs on one), so that they are kept per thread, not per session. While another
    /// turn on the thread holds them (a handler pushing into another session), the thread has empty ones.
    struct ScratchLease {
        /// The thread's tables, unretained (the thread keeps them while it runs the turn); `nil` until taken.
        private var tables: Unmanaged<ThreadTables>?

        /// Whether the turn holds the buffers.
        var isHeld: Bool { tables != nil }

        /// Takes the calling thread's buffers into `scratch` (which should be empty: the thread keeps it).
        mutating func take(into scratch: inout EvaluationScratch) {
            let current = ThreadTables.current
            current._withUnsafeGuaranteedRef { $0.swapScratch(&scratch) }
            tables = current
        }

        /// Gives `scratch` back to the thread it was taken from.
        mutating func giveBack(_ scratch: inout EvaluationScratch) {
            guard let tables else { return }
            tables._withUnsafeGuaranteedRef { $0.swapScratch(&scratch) }
            self.tables = nil
        }
    }
}
