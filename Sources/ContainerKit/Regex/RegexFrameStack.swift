/// A pending step of the Pike VM's closure walk: explore an instruction, or restore a capture slot.
struct RegexFrame {
    /// The instruction to explore, or -1 for a restore frame.
    var pc: Int32
    /// The slot to restore.
    var slot: Int32 = 0
    /// The value to restore.
    var value: Int = 0

    /// A frame exploring `pc`.
    @inline(__always)
    init(pc: Int32) {
        self.pc = pc
    }

    /// A frame restoring `slot` to `value`.
    @inline(__always)
    init(restoring slot: Int32, to value: Int) {
        pc = -1
        self.slot = slot
        self.value = value
    }
}

/// A growable stack of ``RegexFrame``s that starts in caller-owned memory and moves to the heap if it outgrows
/// it. Call ``deallocate()`` once when done.
struct RegexFrameStack {
    private var storage: UnsafeMutablePointer<RegexFrame>
    private var capacity: Int
    private var count = 0
    private var ownsStorage = false

    /// A stack using `initial` until it is full.
    init(initial: UnsafeMutableBufferPointer<RegexFrame>) {
        storage = initial.baseAddress!
        capacity = initial.count
    }

    /// Frees heap memory, if any was taken.
    func deallocate() {
        if ownsStorage { storage.deallocate() }
    }

    var isEmpty: Bool { count == 0 }

    @inline(__always)
    mutating func push(_ frame: RegexFrame) {
        if count == capacity { grow() }
        (storage + count).initialize(to: frame)
        count += 1
    }

    @inline(__always)
    mutating func pop() -> RegexFrame? {
        guard count > 0 else { return nil }
        count -= 1
        return storage[count]
    }

    mutating func removeAll() {
        count = 0
    }

    private mutating func grow() {
        let bigger = UnsafeMutablePointer<RegexFrame>.allocate(capacity: capacity * 2)
        bigger.moveInitialize(from: storage, count: count)
        if ownsStorage { storage.deallocate() }
        storage = bigger
        capacity *= 2
        ownsStorage = true
    }
}
