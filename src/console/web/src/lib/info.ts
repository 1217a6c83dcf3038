// What GetConsoleInfo said about the signed-in caller (account, ARN, features), for views that need
// the account (a log group's ARN for StartLiveTail).
let account = "";

export function setAccount(a: string): void {
  account = a;
}

export function getAccount(): string {
  return account;
}
