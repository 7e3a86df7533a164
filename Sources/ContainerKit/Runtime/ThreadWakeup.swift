import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The identity of the calling thread, to tell a handler's nested push from another caller's.
struct ThreadID: Sendable, Equatable {
    private let raw: UInt

    static var current: ThreadID {
        #if canImport(Darwin)
            ThreadID(raw: UInt(bitPattern: pthread_self()))
        #else
            ThreadID(raw: UInt(pthread_self()))
        #endif
    }
}

/// A one-shot signal a blocked thread waits on until another thread hands it its turn.
final class ThreadWakeup: Sendable {
    private let signalled = Mutex(false)
    private let condition = ConditionBox()

    func signal() {
        condition.lock()
        signalled.withLock { $0 = true }
        condition.broadcast()
        condition.unlock()
    }

    func wait() {
        condition.lock()
        while !signalled.withLock({ $0 }) { condition.wait() }
        condition.unlock()
    }
}

/// A pthread mutex and condition variable with a stable address.
final class ConditionBox: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(cond, nil)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func unlock() { pthread_mutex_unlock(mutex) }
    func wait() { pthread_cond_wait(cond, mutex) }
    func broadcast() { pthread_cond_broadcast(cond) }
}
