#!/usr/bin/env bash
# Fails when a thread-sanitizer build still locks a `Synchronization.Mutex`: the sanitizer cannot see that lock on
# Linux, so every access it guards would be reported as a race (or, worse, a real race hidden behind a false report).
# In `make tsan` builds every `Mutex` of the package must be `ContainerKitMutex` (a `pthread_mutex_t`); a module that
# names `Mutex` without its own alias of `ContainerKitMutex` gets the stock one.
#
#   Scripts/check-tsan-locks.sh .build/tsan/debug/ContainerKitPackageTests.xctest
set -euo pipefail
binary=$1
found=$(nm "$binary" | swift demangle | grep -o "Synchronization\.Mutex<[^>]*>" | sort | uniq -c || true)
if [ -n "$found" ]; then
    echo "check-tsan-locks: $binary uses Synchronization.Mutex, which the thread sanitizer cannot see:" >&2
    echo "$found" >&2
    echo "check-tsan-locks: name ContainerKitMutex (or a module's Mutex alias of it) instead" >&2
    exit 1
fi
echo "check-tsan-locks: no Synchronization.Mutex in $binary"
