#include "test_data.hpp"

const char* weft_test_data_dir() {
  return WEFT_TEST_DATA_DIR;
}
