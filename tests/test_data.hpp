// Where the tests' data files are (tests/data in the source tree), for the GoogleTest
// suites: WEFT_TEST_DATA is a C string, e.g. std::string(WEFT_TEST_DATA) + "/x.net".
// The path is compiled into one small unit (test_data.cpp): on every unit's command line
// it made each clone's test units miss the compiler cache.
#pragma once

const char* weft_test_data_dir();
#define WEFT_TEST_DATA (weft_test_data_dir())
