/* placeholder until the gateway entry point lands in this session */
int main(void)
{
    return 0;
}
