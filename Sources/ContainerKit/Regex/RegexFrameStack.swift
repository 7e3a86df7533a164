/// A pending step of the Pike VM's closure walk: explore an instruction, or restore a capture slot.
struct RegexFrame {
    /// The instruction to explore, or -1 for a restore frame.
    var pc: Int32
    /// The slot to restore.
    var slot: Int32 = 0
    /// The value to restore.
    var value: Int = 0

    /// A frame exploring `pc`.
    init(pc: Int32) {
        self.pc = pc
    }

    /// A frame restoring `slot` to `value`.
    init(restoring slot: Int32, to value: Int) {
        pc = -1
        self.slot = slot
        self.value = value
    }
}

/// A growable stack of ``RegexFrame``s. Manually managed memory: call ``deallocate()`` once when done.
struct RegexFrameStack {
    private var storage: UnsafeMutablePointer<RegexFrame>
    private var capacity = 64
    private var count = 0

    init() {
        storage = .allocate(capacity: capacity)
    }

    /// Frees the memory.
    func deallocate() {
        storage.deallocate()
    }

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
        storage.deallocate()
        storage = bigger
        capacity *= 2
    }
}
