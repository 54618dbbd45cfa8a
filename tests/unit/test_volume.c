#include "tap.h"
void suite_volume(void)
{
}
