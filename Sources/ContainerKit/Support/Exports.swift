// The package's mutex and owned threads (`ContainerKitMutex`, `OwnedThread`, `untilCancelled`) for every module that
// imports ContainerKit: they are `package` declarations, so nothing of them is visible outside the package.
@_exported import ContainerKitSupport

/// This module's name for the package's mutex: its own declaration, so it shadows the `Synchronization.Mutex` that
/// files import for `withLock` (see ``ContainerKitMutex``).
typealias Mutex<Value> = ContainerKitMutex<Value>
