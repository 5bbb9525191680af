// weft route: offline routing what-ifs (see route.cpp).
#pragma once

namespace weft::app {
int cmd_route(int argc, char** argv);
}
