/// A Pike VM thread list: a sparse set of the instructions entered at one input position, plus the threads
/// (instructions that wait on input, or match) in priority order with their capture slots.
///
/// Manually managed memory: call ``deallocate()`` once when done.
struct RegexThreadList {
    private let sparse: UnsafeMutablePointer<Int32>
    private let dense: UnsafeMutablePointer<Int32>
    private var entered = 0
    /// The waiting threads' instruction indices, in priority order.
    let pcs: UnsafeMutablePointer<Int32>
    /// The number of waiting threads.
    private(set) var count = 0
    private let slotCount: Int
    private var slotStorage: UnsafeMutablePointer<Int>
    private var slotRows: Int

    /// A list for a program of `size` instructions whose threads carry `slotCount` slots.
    init(size: Int, slotCount: Int) {
        let size = Swift.max(size, 1)
        sparse = .allocate(capacity: size)
        sparse.initialize(repeating: 0, count: size)
        dense = .allocate(capacity: size)
        pcs = .allocate(capacity: size)
        self.slotCount = slotCount
        slotRows = Swift.min(size, 16)
        slotStorage = .allocate(capacity: Swift.max(slotRows * slotCount, 1))
    }

    /// Frees the memory.
    func deallocate() {
        sparse.deallocate()
        dense.deallocate()
        pcs.deallocate()
        slotStorage.deallocate()
    }

    /// Empties the list, keeping its memory.
    @inline(__always)
    mutating func clear() {
        entered = 0
        count = 0
    }

    /// Marks `pc` as entered; false if it already was.
    @inline(__always)
    mutating func insert(_ pc: Int32) -> Bool {
        let index = Int(sparse[Int(pc)])
        if index < entered && dense[index] == pc { return false }
        sparse[Int(pc)] = Int32(entered)
        dense[entered] = pc
        entered += 1
        return true
    }

    /// Appends a thread at `pc` with a copy of `slots`.
    @inline(__always)
    mutating func append(_ pc: Int32, slots: UnsafeMutablePointer<Int>) {
        pcs[count] = pc
        if slotCount > 0 {
            if count == slotRows { growSlots() }
            (slotStorage + count * slotCount).update(from: slots, count: slotCount)
        }
        count += 1
    }

    /// The slots of thread `index`.
    @inline(__always)
    func slots(at index: Int) -> UnsafeMutablePointer<Int> {
        slotStorage + index * slotCount
    }

    private mutating func growSlots() {
        let rows = slotRows * 2
        let storage = UnsafeMutablePointer<Int>.allocate(capacity: rows * slotCount)
        storage.moveInitialize(from: slotStorage, count: slotRows * slotCount)
        slotStorage.deallocate()
        slotStorage = storage
        slotRows = rows
    }
}
