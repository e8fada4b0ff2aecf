#pragma once

namespace ppat_cli {

// Runs every primitive once on random data against the host reference and prints one
// PASS/FAIL line each; returns the process exit code (0 when all pass).
int self_check();

}  // namespace ppat_cli
