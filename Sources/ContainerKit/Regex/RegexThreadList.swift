/// A Pike VM thread list: a sparse set of the instructions entered at one input position, plus the threads
/// (instructions that wait on input, or match) in priority order with their capture slots.
///
/// The instruction sets live in memory owned by the caller; the capture slots are allocated here and freed by
/// ``deallocate()``.
struct RegexThreadList {
    private let sparse: UnsafeMutablePointer<Int32>
    private let dense: UnsafeMutablePointer<Int32>
    private var entered = 0
    /// The waiting threads' instruction indices, in priority order.
    let pcs: UnsafeMutablePointer<Int32>
    /// The number of waiting threads.
    private(set) var count = 0
    private let slotCount: Int
    private var slotStorage: UnsafeMutablePointer<Int>?
    private var slotRows = 0

    /// A list for a program of `size` instructions whose threads carry `slotCount` slots, using `memory`
    /// (room for `3 * size` values).
    init(memory: UnsafeMutablePointer<Int32>, size: Int, slotCount: Int) {
        sparse = memory
        sparse.initialize(repeating: 0, count: size)
        dense = memory + size
        pcs = memory + 2 * size
        self.slotCount = slotCount
    }

    /// Frees the capture slots.
    func deallocate() {
        slotStorage?.deallocate()
    }

    /// Empties the list, keeping its memory.
    @inline(__always)
    mutating func clear() {
        entered = 0
        count = 0
    }

    /// Whether `pc` was entered.
    @inline(__always)
    func contains(_ pc: Int32) -> Bool {
        let index = Int(sparse[Int(pc)])
        return index < entered && dense[index] == pc
    }

    /// Marks `pc` as entered; false if it already was.
    @inline(__always)
    mutating func insert(_ pc: Int32) -> Bool {
        if contains(pc) { return false }
        sparse[Int(pc)] = Int32(truncatingIfNeeded: entered)
        dense[entered] = pc
        entered += 1
        return true
    }

    /// Appends a thread at `pc` (for lists without capture slots).
    @inline(__always)
    mutating func append(_ pc: Int32) {
        pcs[count] = pc
        count += 1
    }

    /// Appends a thread at `pc` with a copy of `slots`.
    @inline(__always)
    mutating func append(_ pc: Int32, slots: UnsafeMutablePointer<Int>) {
        if count == slotRows { growSlots() }
        (slotStorage! + count * slotCount).update(from: slots, count: slotCount)
        pcs[count] = pc
        count += 1
    }

    /// The slots of thread `index`.
    @inline(__always)
    func slots(at index: Int) -> UnsafeMutablePointer<Int> {
        slotStorage! + index * slotCount
    }

    private mutating func growSlots() {
        let rows = Swift.max(slotRows * 2, 8)
        let storage = UnsafeMutablePointer<Int>.allocate(capacity: rows * slotCount)
        if let slotStorage {
            storage.moveInitialize(from: slotStorage, count: slotRows * slotCount)
            slotStorage.deallocate()
        }
        slotStorage = storage
        slotRows = rows
    }
}
