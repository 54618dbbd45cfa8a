#include "tap.h"
void suite_cli(void)
{
}
