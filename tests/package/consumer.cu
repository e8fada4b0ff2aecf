// Compiles against ppat as a user would; running it is not needed to prove the package.
#include <ppat/ppat.cuh>
#include <ppat/textbook.cuh>

int main() {
  ppat::textbook::blelloch_inclusive_scan<int>(nullptr, nullptr, 0);
  return 0;
}
