// The mutex's type is `Synchronization.Mutex` outside thread-sanitizer builds, and lock-counting builds count in an
// `Atomic`: both are package declarations that name the module's types.
#if CONTAINERKIT_TSAN && !CONTAINERKIT_COUNT_LOCKS
    import Synchronization
#else
    package import Synchronization
#endif

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

#if CONTAINERKIT_COUNT_LOCKS
    /// How many times the package's mutexes were locked, in lock-counting builds (`-Xswiftc
    /// -DCONTAINERKIT_COUNT_LOCKS`, see `make count-locks`): what `containerkit-bench` reads to report the locks
    /// a push and a delivered batch take.
    package let containerKitLockCount = Atomic<Int>(0)
#endif

#if CONTAINERKIT_TSAN || CONTAINERKIT_COUNT_LOCKS
    /// The package's mutex in thread-sanitizer builds (`-Xswiftc -DCONTAINERKIT_TSAN`, see `make tsan`): a
    /// `pthread_mutex_t`, whose lock and unlock the sanitizer intercepts, with the same `withLock` as
    /// `Synchronization.Mutex` — which the sanitizer cannot see on Linux, so a stock run reports every
    /// access it guards as a race. Lock-counting builds use it too, counting each lock.
    ///
    /// `@unchecked`: a lock is what makes its value safe to share; every access to `value` is inside
    /// `withLock`, between `pthread_mutex_lock` and `pthread_mutex_unlock`.
    package final class ContainerKitMutex<Value>: @unchecked Sendable {
        private var value: Value
        private let mutex: UnsafeMutablePointer<pthread_mutex_t>

        /// A mutex guarding `initialValue`.
        package init(_ initialValue: sending Value) {
            value = initialValue
            mutex = .allocate(capacity: 1)
            mutex.initialize(to: pthread_mutex_t())
            pthread_mutex_init(mutex, nil)
        }

        deinit {
            pthread_mutex_destroy(mutex)
            mutex.deallocate()
        }

        /// Runs `body` with exclusive access to the value.
        package func withLock<Result, E: Error>(
            _ body: (inout sending Value) throws(E) -> sending Result
        ) throws(E) -> sending Result {
            pthread_mutex_lock(mutex)
            defer { pthread_mutex_unlock(mutex) }
            #if CONTAINERKIT_COUNT_LOCKS
                containerKitLockCount.add(1, ordering: .relaxed)
            #endif
            return try body(&value)
        }

        /// Runs `body` with exclusive access to the value if the lock is free, else returns `nil`.
        package func withLockIfAvailable<Result, E: Error>(
            _ body: (inout sending Value) throws(E) -> sending Result
        ) throws(E) -> sending Result? {
            guard pthread_mutex_trylock(mutex) == 0 else { return nil }
            defer { pthread_mutex_unlock(mutex) }
            #if CONTAINERKIT_COUNT_LOCKS
                containerKitLockCount.add(1, ordering: .relaxed)
            #endif
            return try body(&value)
        }
    }
#else
    /// The package's mutex: `Synchronization.Mutex`, except in thread-sanitizer builds (`CONTAINERKIT_TSAN`),
    /// where it is a `pthread_mutex_t` the sanitizer understands.
    ///
    /// Call sites name it `Mutex`: each module that locks one declares its own internal
    /// `typealias Mutex<Value> = ContainerKitMutex<Value>`, because only a module's own declaration shadows the
    /// `Synchronization.Mutex` that a file imports for `withLock` (an alias imported from another module would be
    /// ambiguous with it in `make tsan` builds, where the two differ; `Scripts/check-tsan-locks.sh` checks).
    package typealias ContainerKitMutex<Value> = Synchronization.Mutex<Value>
#endif
