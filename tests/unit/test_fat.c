#include "tap.h"
void suite_fat(void)
{
}
