// The package's mutex and owned threads (`ContainerKitMutex`, `OwnedThread`, `untilCancelled`) for every module that
// imports ContainerKit: they are `package` declarations, so nothing of them is visible outside the package.
@_exported import ContainerKitSupport

/// The package's `Mutex`: `Synchronization.Mutex`, or in thread-sanitizer builds a lock the sanitizer
/// understands (see `ContainerKitMutex`). Declared here, in ContainerKit, because a module's own declaration shadows
/// one it imports: in ContainerKit, and in every module of the package that imports ContainerKit (which imports
/// Synchronization), it shadows the `Synchronization.Mutex` a file may also import. (Declared in
/// ContainerKitSupport, the name would be ambiguous as a type in `make tsan` builds, where the two differ.)
package typealias Mutex<Value> = ContainerKitMutex<Value>
