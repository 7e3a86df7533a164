import ContainerKit

/// This module's `Mutex`: `Synchronization.Mutex`, or in thread-sanitizer builds a lock the sanitizer
/// understands (see `ContainerKitMutex`). It shadows the imported `Synchronization.Mutex`.
typealias Mutex<Value> = ContainerKitMutex<Value>
