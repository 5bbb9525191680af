// weft roce: the RoCE fabric controller's command line (see roce.cpp).
#pragma once

namespace weft::app {
int cmd_roce(int argc, char** argv);
}
